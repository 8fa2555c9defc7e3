"""HTTP to ``/api/v1/`` with urllib, and every way it can fail turned into a ``CliError`` that
says what happened and what to do (400: each refused field; 401, 403, 404, 409, 429; 5xx; the
server not reachable)."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any

from gpuplatform_cli.config import Settings
from gpuplatform_cli.errors import CliError, Exit

TIMEOUT_SECONDS = 30
USER_AGENT = "gpuplatform-cli/0.1"


@dataclass(frozen=True)
class Answer:
    data: Any  # the decoded JSON body
    server_time: datetime | None  # the Date header: the server's clock, for "in 5 min"


def field_errors(body: Any, prefix: str = "") -> list[str]:
    """``field: message`` lines of a DRF 400 body (nested fields joined with dots)."""
    if isinstance(body, dict):
        lines = []
        for key, value in body.items():
            name = "" if key in ("non_field_errors", "detail") else str(key)
            lines += field_errors(value, f"{prefix}.{name}" if prefix and name else prefix or name)
        return lines
    if isinstance(body, list):
        if all(isinstance(item, str) for item in body):
            return [f"{prefix}: {item}" if prefix else str(item) for item in body]
        lines = []
        for index, item in enumerate(body):
            lines += field_errors(item, f"{prefix}[{index}]" if prefix else str(index))
        return lines
    return [f"{prefix}: {body}" if prefix else str(body)]


def _detail(body: Any) -> str:
    if isinstance(body, dict) and isinstance(body.get("detail"), str):
        return str(body["detail"])
    return ""


class Client:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def get(self, path: str, what: str = "", **params: Any) -> Answer:
        return self.request("GET", path, what=what, params=params)

    def post(self, path: str, body: Any = None, what: str = "") -> Answer:
        return self.request("POST", path, body=body, what=what)

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: dict[str, Any] | None = None,
        what: str = "",
    ) -> Answer:
        """``what`` names the object for a 404 ("job 42")."""
        url = f"{self.settings.url}/api/v1/{path.lstrip('/')}"
        query = {key: value for key, value in (params or {}).items() if value is not None}
        if query:
            url += "?" + urllib.parse.urlencode(query, doseq=True)
        headers = {
            "Authorization": f"Bearer {self.settings.token}",
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
        }
        data = None
        if body is not None or method == "POST":
            data = json.dumps(body if body is not None else {}).encode()
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
                raw = response.read()
                date = response.headers.get("Date")
        except urllib.error.HTTPError as error:
            raise self._http_error(error, what) from None
        except urllib.error.URLError as error:
            reason = getattr(error.reason, "strerror", None) or str(error.reason)
            raise self._unreachable(reason) from None
        except TimeoutError:
            raise self._unreachable(f"no answer within {TIMEOUT_SECONDS} s") from None
        except ConnectionError as error:
            raise self._unreachable(error.strerror or str(error)) from None
        return Answer(data=self._json(raw, url), server_time=_parse_date(date))

    def _unreachable(self, reason: str) -> CliError:
        return CliError(
            Exit.UNREACHABLE,
            f"Cannot reach {self.settings.url}: {reason}. Is the server running, and is "
            "GPUPLATFORM_URL (or 'url' in the config file) right?",
        )

    def _json(self, raw: bytes, url: str) -> Any:
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            raise CliError(
                Exit.SERVER,
                f"{url} did not answer JSON: is GPUPLATFORM_URL the platform's address "
                "(not a login page or a proxy)?",
            ) from None

    def _http_error(self, error: urllib.error.HTTPError, what: str) -> CliError:
        status = error.code
        try:
            body: Any = json.loads(error.read() or b"null")
        except ValueError:
            body = None
        detail = _detail(body)
        if status == 400:
            lines = field_errors(body) or ["(no details)"]
            return CliError(
                Exit.REFUSED,
                "The server refused the request:\n" + "\n".join(f"  {line}" for line in lines),
            )
        if status == 401:
            return CliError(
                Exit.DENIED,
                "The server refused the token (401: revoked, expired or mistyped"
                + (f"; {detail}" if detail else "")
                + "). Create a new one on the API tokens page (/account/tokens/).",
            )
        if status == 403:
            return CliError(
                Exit.DENIED, f"Not allowed (403): {detail or 'your role may not do this.'}"
            )
        if status == 404:
            return CliError(
                Exit.NOT_FOUND,
                f"Not found (404): {what or 'that object'} does not exist or belongs to a team "
                "you are not in.",
            )
        if status == 409:
            return CliError(Exit.REFUSED, f"Conflict (409): {detail or 'not possible now.'}")
        if status == 429:
            wait = error.headers.get("Retry-After")
            return CliError(
                Exit.RATE_LIMITED,
                f"Too many requests (429): {detail or 'slow down.'}"
                + (f" Try again in {wait} s." if wait else ""),
            )
        return CliError(
            Exit.SERVER,
            f"The server failed ({status} {error.reason})" + (f": {detail}" if detail else "."),
        )


def _parse_date(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None

"""Where the server is and which token to send.

``GPUPLATFORM_URL`` and ``GPUPLATFORM_TOKEN`` from the environment win; what they leave unset
comes from the config file, ``$XDG_CONFIG_HOME/gpuplatform/config.yaml`` (by default
``~/.config/gpuplatform/config.yaml``, or the file ``GPUPLATFORM_CONFIG`` names)::

    url: https://gpu.example.org
    token: gpp_0123456789ab_...

The file holds a secret: it is read only when nobody but its owner may read or write it
(``chmod 600``); otherwise the CLI stops and says so, as ssh does with a private key.
"""

from __future__ import annotations

import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from gpuplatform_cli.errors import CliError, Exit

URL_VARIABLE = "GPUPLATFORM_URL"
TOKEN_VARIABLE = "GPUPLATFORM_TOKEN"
CONFIG_VARIABLE = "GPUPLATFORM_CONFIG"


@dataclass(frozen=True)
class Settings:
    url: str  # without a trailing slash
    token: str


def config_path(environ: Mapping[str, str]) -> Path:
    if environ.get(CONFIG_VARIABLE):
        return Path(environ[CONFIG_VARIABLE])
    base = environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "gpuplatform" / "config.yaml"


def read_config_file(path: Path) -> dict[str, str]:
    """The file's ``url`` and ``token`` ({} when there is no file)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise CliError(Exit.CONFIG, f"Cannot read {path}: {error.strerror}.") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise CliError(
            Exit.CONFIG,
            f"{path} holds your API token but others may read it (mode "
            f"{stat.S_IMODE(mode):04o}); run: chmod 600 {path}",
        )
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise CliError(Exit.CONFIG, f"Cannot read {path}: {error}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise CliError(Exit.CONFIG, f"{path} should be a mapping with 'url' and 'token'.")
    unknown = sorted(str(key) for key in data if key not in ("url", "token"))
    if unknown:
        raise CliError(Exit.CONFIG, f"{path}: unknown key {', '.join(unknown)} (url, token).")
    for key, value in data.items():
        if not isinstance(value, str):
            raise CliError(Exit.CONFIG, f"{path}: '{key}' should be a string.")
    return dict(data)


def load_settings(environ: Mapping[str, str]) -> Settings:
    """The server and the token, from the environment, else the config file."""
    url = environ.get(URL_VARIABLE, "").strip()
    token = environ.get(TOKEN_VARIABLE, "").strip()
    path = config_path(environ)
    if not (url and token):
        from_file = read_config_file(path)
        url = url or from_file.get("url", "").strip()
        token = token or from_file.get("token", "").strip()
    missing = [
        f"{name} ({variable} or '{key}' in {path})"
        for name, variable, key, value in (
            ("the server", URL_VARIABLE, "url", url),
            ("an API token", TOKEN_VARIABLE, "token", token),
        )
        if not value
    ]
    if missing:
        raise CliError(
            Exit.CONFIG,
            "Missing " + " and ".join(missing) + ". Create a token on the site's API tokens "
            "page (/account/tokens/).",
        )
    if not url.startswith(("http://", "https://")):
        raise CliError(Exit.CONFIG, f"The server URL should start with https:// ({url!r}).")
    return Settings(url=url.rstrip("/"), token=token)

"""The CLI's world: ``cli(*args)`` runs ``gpuplatform_cli.main.main`` with the server and token
of ``cli_env`` (a live server and a real API token of researcher A, no config file) and returns
(exit code, stdout, stderr); ``canned`` serves fixed answers over real HTTP (a local
http.server) for what the live server cannot be made to say."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from gpuplatform_cli.main import main
from tokens.models import ApiToken

Run = Callable[..., tuple[int, str, str]]


@pytest.fixture(autouse=True)
def _no_broker(monkeypatch: pytest.MonkeyPatch) -> None:
    """Submissions and cancellations queue a cycle through Celery; here the tests run cycles."""
    from queues import tasks

    monkeypatch.setattr(tasks.run_scheduling_cycle, "delay", lambda: None)


def token_for(user: User) -> str:
    return ApiToken.issue(user=user, name="cli tests")[1]


@pytest.fixture
def cli_env(live_server: Any, researcher_a: User, tmp_path: Path) -> dict[str, str]:
    return {
        "GPUPLATFORM_URL": live_server.url,
        "GPUPLATFORM_TOKEN": token_for(researcher_a),
        "GPUPLATFORM_CONFIG": str(tmp_path / "no-config.yaml"),
    }


@pytest.fixture
def cli(cli_env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> Run:
    def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(list(args), environ=cli_env if env is None else env)
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


@dataclass
class Canned:
    """What the canned server answers, and the paths it was asked for."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] | None = None
    raw: bytes | None = None  # sent instead of the JSON body
    requests: list[str] | None = None
    tokens: list[str] | None = None  # the Authorization headers received
    url: str = ""


@pytest.fixture
def canned() -> Iterator[Canned]:
    answer = Canned(requests=[], tokens=[])

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            assert answer.requests is not None
            assert answer.tokens is not None
            answer.requests.append(self.path)
            answer.tokens.append(self.headers.get("Authorization", ""))
            payload = answer.raw if answer.raw is not None else json.dumps(answer.body).encode()
            self.send_response(answer.status)
            self.send_header("Content-Type", "application/json")
            for key, value in (answer.headers or {}).items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_POST = do_GET

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    answer.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield answer
    finally:
        server.shutdown()
        server.server_close()

"""The servers of ``live_e2e.py``: gunicorn and a Celery worker with beat, as subprocesses.

Each child runs in a session of its own and writes its log to a file of the run's folder;
``Stack`` is a context manager that stops every child it started (SIGTERM to its main process,
then SIGKILL to whatever is left of its process group) however the block ends: an error, Ctrl-C
or SIGTERM.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

ROOT = Path(__file__).resolve().parent.parent
STOP_SECONDS = 20.0


def free_port() -> int:
    """A TCP port nobody listens on now (the kernel picks it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ChildExited(RuntimeError):
    """A server of the stack exited while the benchmark needed it."""


class Stack:
    """``with Stack(env, folder) as stack: stack.start_web(...); stack.start_worker(...)``."""

    def __init__(self, env: dict[str, str], folder: Path) -> None:
        self.env = env
        self.folder = folder
        self.children: dict[str, subprocess.Popen[bytes]] = {}

    def __enter__(self) -> Stack:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()

    def log(self, name: str) -> Path:
        return self.folder / f"{name}.log"

    def _start(self, name: str, command: list[str]) -> subprocess.Popen[bytes]:
        with self.log(name).open("ab") as log:
            child = subprocess.Popen(
                command,
                cwd=ROOT,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stopped whole, never by Ctrl-C
            )
        self.children[name] = child
        return child

    def start_web(self, port: int, workers: int, options: list[str] | None = None) -> str:
        """gunicorn with ``workers`` workers on 127.0.0.1:``port``, configured as deployed (the
        repository's gunicorn.conf.py) unless ``options`` say otherwise (e.g. ``["--worker-class",
        "sync"]``); returns its base URL once /healthz answers."""
        self._start(
            "web",
            [
                sys.executable, "-m", "gunicorn", "gpuplatform.wsgi",
                "--bind", f"127.0.0.1:{port}", "--workers", str(workers), "--timeout", "120",
                *(options or []),
            ],
        )  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        self.wait_until("web", lambda: _answers(f"{base}/healthz"), timeout=90)
        return base

    def start_worker(self, concurrency: int) -> None:
        """``celery -A gpuplatform worker -B`` (beat inside the worker; its schedule file in the
        run's folder)."""
        self._start(
            "worker",
            [
                sys.executable, "-m", "celery", "-A", "gpuplatform", "worker", "-B",
                "--loglevel", "INFO", "--concurrency", str(concurrency),
                "--schedule", str(self.folder / "celerybeat-schedule"),
            ],
        )  # fmt: skip

    def check_alive(self) -> None:
        for name, child in self.children.items():
            if child.poll() is not None:
                raise ChildExited(
                    f"{name} exited with status {child.returncode}; see {self.log(name)}"
                )

    def wait_until(self, name: str, ready: Callable[[], bool], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            self.check_alive()
            if time.monotonic() > deadline:
                raise TimeoutError(f"{name} not ready after {timeout:.0f} s; see {self.log(name)}")
            time.sleep(0.25)

    def pids(self, name: str) -> list[int]:
        """The process ids of one child's group (gunicorn's master and workers, Celery's pool)."""
        child = self.children[name]
        listed = subprocess.run(
            ["pgrep", "-g", str(child.pid)], capture_output=True, text=True, check=False
        )
        return [int(pid) for pid in listed.stdout.split()]

    def cpu_seconds(self, name: str) -> float:
        """User + system CPU seconds used so far by one child's live processes (Linux /proc)."""
        ticks = os.sysconf("SC_CLK_TCK")
        total = 0
        for pid in self.pids(name):
            with contextlib.suppress(OSError):
                fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
                total += int(fields[11]) + int(fields[12])  # utime, stime
        return total / ticks

    def stop(self) -> None:
        """SIGTERM every child's main process (gunicorn's master and Celery's main process stop
        their own workers, warmly), SIGKILL what is left of its group after STOP_SECONDS."""
        for child in self.children.values():
            if child.poll() is None:
                child.terminate()
        deadline = time.monotonic() + STOP_SECONDS
        for name, child in self.children.items():
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                print(f"  {name} did not stop in {STOP_SECONDS:.0f} s: killed", flush=True)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)  # stragglers of its group
            if child.poll() is None:
                child.wait()
        self.children.clear()


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False

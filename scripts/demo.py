#!/usr/bin/env python
"""Run the demo in the foreground: web server, Celery worker and Celery beat.

Started by ``make demo`` (after migrate and seed_demo). Each process runs in its own session
so that one Ctrl-C here stops all three cleanly (their whole process groups, including
runserver's auto-reloader child); if one of them dies, the others are stopped too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HOST_PORT = os.environ.get("DEMO_ADDRESS", "127.0.0.1:8000")
PYTHON = sys.executable

PROCESSES: dict[str, list[str]] = {
    "web": [PYTHON, "manage.py", "runserver", HOST_PORT],
    # gossip/mingle/heartbeat need broadcast messaging, which the server-less filesystem
    # broker does not offer; the demo runs a single worker, which needs none of them.
    "worker": [
        PYTHON, "-m", "celery", "-A", "gpuplatform", "worker", "--loglevel", "INFO",
        "--concurrency", "2", "--without-gossip", "--without-mingle", "--without-heartbeat",
    ],
    "beat": [PYTHON, "-m", "celery", "-A", "gpuplatform", "beat", "--loglevel", "INFO"],
}  # fmt: skip

STOP_TIMEOUT = 15.0


def print_banner() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuplatform.settings")
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from queues.management.commands.seed_demo import DEMO_USERS

    print(f"\n  gpuplatform demo: open http://{HOST_PORT}/  (Ctrl-C stops everything)\n")
    for user in DEMO_USERS:
        print(f"    {user['username']:<8} {user['password']:<12} {user['role']}")
    print(flush=True)


def stop(children: dict[str, subprocess.Popen[bytes]]) -> None:
    """SIGTERM each main process (Celery then shuts down warmly, stopping its own pool); the web
    server's whole group, so that runserver's auto-reloader child goes too. SIGKILL stragglers."""
    for name, child in children.items():
        if child.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                if name == "web":
                    os.killpg(child.pid, signal.SIGTERM)
                else:
                    child.terminate()
    deadline = time.monotonic() + STOP_TIMEOUT
    for name, child in children.items():
        try:
            child.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            print(f"demo: {name} did not stop in {STOP_TIMEOUT:.0f} s; killing it", flush=True)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
            child.wait()
        # Whatever is left in the group (an orphaned reloader or pool child) goes too.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)


def main() -> int:
    print_banner()
    children: dict[str, subprocess.Popen[bytes]] = {}
    stopping = False

    def request_stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    for name, command in PROCESSES.items():
        children[name] = subprocess.Popen(command, cwd=REPO, start_new_session=True)
        print(f"demo: started {name} (pid {children[name].pid})", flush=True)

    exit_code = 0
    while not stopping:
        for name, child in children.items():
            if child.poll() is not None:
                print(f"demo: {name} exited with status {child.returncode}; stopping", flush=True)
                exit_code = child.returncode or 1
                stopping = True
                break
        time.sleep(0.5)
    print("demo: stopping web, worker and beat", flush=True)
    stop(children)
    return exit_code


if __name__ == "__main__":
    sys.exit(main())

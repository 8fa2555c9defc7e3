"""The CLI runs where only the package is installed: it imports the standard library and PyYAML,
nothing of Django or the server's apps."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CODE = """
import importlib, pkgutil, sys
import gpuplatform_cli
names = [m.name for m in pkgutil.walk_packages(gpuplatform_cli.__path__, "gpuplatform_cli.")]
for name in names:
    if not name.endswith("__main__"):
        importlib.import_module(name)
server = ("django", "rest_framework", "celery", "gpuplatform", "queues", "accounting", "tokens",
          "dashboards", "demo", "audit", "gpusched", "kubernetes", "requests")
bad = sorted(m for m in sys.modules if m.split(".")[0] in server)
assert not bad, bad
print(len(names))
"""


def test_the_cli_imports_no_django_and_nothing_of_the_server() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CODE], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) >= 6

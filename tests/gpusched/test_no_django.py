"""``gpusched`` is a library beside the Django apps: nothing in it imports Django or the apps."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CODE = """
import importlib, pkgutil, sys
import gpusched
names = [m.name for m in pkgutil.walk_packages(gpusched.__path__, "gpusched.")]
for name in names:
    if not name.endswith("__main__"):
        importlib.import_module(name)
apps = ("django", "rest_framework", "celery", "queues", "accounting", "dashboards", "demo")
bad = sorted(m for m in sys.modules if m.split(".")[0] in apps)
assert not bad, bad
print(len(names))
"""


def test_no_module_of_gpusched_imports_django_or_the_apps() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CODE], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) >= 25  # engine, simulator, checker and trace importers all imported

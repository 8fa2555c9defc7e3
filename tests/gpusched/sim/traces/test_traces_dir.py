"""Where the importers look for the public traces."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpusched.sim.traces.common import TRACES_ENV, traces_dir

REPO_ROOT = Path(__file__).resolve().parents[4]


def test_traces_default_to_shared_beside_the_repository_checkout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(TRACES_ENV, raising=False)
    assert traces_dir() == REPO_ROOT.parent / "shared" / "traces"


def test_environment_variable_overrides_the_traces_location(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(TRACES_ENV, str(tmp_path))
    assert traces_dir() == tmp_path

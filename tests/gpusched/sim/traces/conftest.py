"""Fixtures for the trace importer tests: the real public traces, read-only.

Tests that need the trace files are skipped (with the reason) where they are absent; set
GPUPLATFORM_TRACES_DIR to point at them.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

import pytest

from gpusched.sim.traces.common import traces_dir


def trace_folder(name: str) -> Path:
    folder = traces_dir() / name
    if not folder.is_dir():
        pytest.skip(f"trace folder {folder} is not available")
    return folder


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="session")
def rows() -> Callable[[Path], list[dict[str, str]]]:
    """Read a CSV file the plain way, to check the importers against the rows themselves."""
    return read_rows


@pytest.fixture(scope="session")
def philly_dir() -> Path:
    return trace_folder("philly-pcs")


@pytest.fixture(scope="session")
def alibaba_dir() -> Path:
    return trace_folder("alibaba-openb-2023")


@pytest.fixture(scope="session")
def itp_dir() -> Path:
    return trace_folder("microsoft-itp-2021")

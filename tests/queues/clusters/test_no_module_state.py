"""The modules that follow clusters across cycles keep nothing at module level: the caches live
in the drivers a `DriverPool` holds, and the pool in its owner (the Celery task of each worker
process). Same rule and check as tests/gpusched/test_no_module_state.py."""

from __future__ import annotations

import importlib
import logging

import pytest

from tests.gpusched.test_no_module_state import _immutable

MODULES = (
    "queues.clusters.watch",
    "queues.clusters.pool",
    "queues.clusters.k8s_state",
    "queues.clusters.k8s_objects",
    "queues.clusters.kubernetes",
)


@pytest.mark.parametrize("name", MODULES)
def test_the_module_keeps_no_mutable_state(name: str) -> None:
    module = importlib.import_module(name)
    mutable = sorted(
        f"{key} ({type(value).__name__})"
        for key, value in vars(module).items()
        if not (key.startswith("__") and key.endswith("__"))
        and not _immutable(value)
        and not isinstance(value, logging.Logger)  # the logging module's, configured at start
    )
    assert not mutable, f"{name} keeps module-level mutable state: {', '.join(mutable)}"

"""The cycle's pause of Python's cyclic garbage collector (``cyclic_gc_paused``).

A deep backlog makes a cycle allocate hundreds of thousands of small objects (each job's facts
and explanation, the walk's keys), and each burst of allocations triggers a collection that
walks every live object of the process: a quarter of the CPU of an explained cycle with 50,000
pending jobs (BENCHMARKS.md). Reference counting still frees what the cycle drops at once;
only reference cycles wait for the collector's next run after the cycle.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """The collector paused for the block, then left as it was found. Only the caller that
    paused it resumes it, so threads running cycles side by side leave it enabled."""
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()

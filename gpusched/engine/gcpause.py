"""The cycle's pause of Python's cyclic garbage collector (``cyclic_gc_paused``).

A deep backlog makes a cycle allocate hundreds of thousands of small objects (each job's facts
and explanation, the walk's keys), and each burst of allocations triggers a collection that
walks every live object of the process: a quarter of the CPU of an explained cycle with 50,000
pending jobs (BENCHMARKS.md). Reference counting still frees what the cycle drops at once.

After a large cycle (more than ``MOVE_AFTER`` young objects left alive: its result, a
``PendingInfo`` per waiting job), resuming the collector also moves the young objects to the
oldest generation, as ``gc.freeze()`` then ``gc.unfreeze()`` do without walking them, which
resets the count of young objects: otherwise the first allocation after the cycle starts a
young collection that walks all of them (about 50,000 objects after a 50,000-pending cycle, a
tenth of its CPU) only to find them alive. A cycle leaves no reference cycles to free (that
collection found none), but whatever garbage cycles the process had made just before it and
not yet collected then wait for the next full collection: a little memory held longer, so
small cycles, whose young collection is cheap, do not move them. Not done either when the
process froze objects of its own (``gc.get_freeze_count``): unfreezing would release them.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# young objects counted when a cycle ends (``gc.get_count()[0]``: what it left alive and the
# garbage the paused collector has not freed yet), above which they are moved (module doc)
MOVE_AFTER = 10_000


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
            if gc.get_count()[0] > MOVE_AFTER and not gc.get_freeze_count():
                gc.freeze()  # what the block left alive joins the oldest generation,
                gc.unfreeze()  # unwalked (see the module doc)
            gc.enable()

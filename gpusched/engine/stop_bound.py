"""Rule 1's stop bound (docs/SCHEDULING.md section 4): how often the scheduler stops one job.

A job already stopped and requeued ``STOP_BOUND`` times (for any reason) is **held to nominal**
from then on, when its queue's nominal quota could hold it (its least workers in one of its
flavors): it starts again only within that nominal, as a job of a class that may not borrow,
and it runs as a job of a class that is not preemptible, so no reclaim, fair-share or priority
stop can reach it (node failures, drains, ``max_runtime`` and cancellation still can). That is
KAI Scheduler's rule for non-preemptible workloads (they run only within their queue's quota),
applied to a job the scheduler has restarted often enough. A reclaim never needs it: it was
admitted within nominal, so whatever its queue borrows is held by its other jobs.

A job larger than its queue's nominal in every flavor could never start that way; it goes on
borrowing as its class allows, and rule 5 puts it after every other candidate of its queue.
Fair sharing and priority never stop a job from its ``STOP_BOUND``-th stop on (preemption.py).

The held variant is a class of its own (its name ends in ``HELD_SUFFIX``), so every rule, memo
and explanation that reads a job's class reads the same answer: ``CycleContext.cls_of`` for a
pending job, the bookkeeping for an admitted one (``held_to_nominal`` decides both).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # model.py imports explain.py, which imports this module
    from gpusched.engine.model import ServiceClass

STOP_BOUND = 3
HELD_SUFFIX = " (held to nominal)"


def held_to_nominal(
    stops: int,
    cls: ServiceClass,
    queue: str,
    flavors: Iterable[str],
    units: int,
    nominal: Callable[[str, str], int],
) -> bool:
    """Whether a job of ``cls``, stopped ``stops`` times before, whose least workers need
    ``units`` of one of ``flavors``, is held to its queue's nominal (``nominal(queue,
    flavor)``: its nominal quota). A class that may not borrow or is not preemptible is that way
    already."""
    if stops < STOP_BOUND or not cls.can_borrow or not cls.preemptible:
        return False
    return any(units <= nominal(queue, f) for f in flavors)


def held_class(cls: ServiceClass, known: dict[str, ServiceClass]) -> ServiceClass:
    """``cls``'s held variant: it may not borrow and is not preemptible. Kept in ``known`` by its
    name, so a class has one held variant object."""
    name = cls.name + HELD_SUFFIX
    held = known.get(name)
    if held is None:
        held = known[name] = replace(cls, name=name, can_borrow=False, preemptible=False)
    return held


def own_class_name(name: str) -> str:
    """The class a user gave the job: ``name`` without the held suffix."""
    return name.removesuffix(HELD_SUFFIX)

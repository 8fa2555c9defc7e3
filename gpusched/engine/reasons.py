"""Why a job the walk tried was not admitted in a flavor (docs/SCHEDULING.md section 4): the
capacity reasons, and which flavor's reason a job that lists several is told (``first_reason``).
"""

from __future__ import annotations

from gpusched.engine import explain
from gpusched.engine.memo import Blocked
from gpusched.engine.model import PendingJob
from gpusched.engine.placement import Capacity


def first_reason(kept: Blocked | None, reason: str, flavor: str) -> Blocked:
    """The reason a job waits: its first flavor's, unless it can never run there and only waits
    for another flavor."""
    if kept is None or (kept[0] in explain.NEVER and reason not in explain.NEVER):
        return (reason, flavor)
    return kept


def capacity_reason(cap: Capacity, job: PendingJob, flavor: str) -> str:
    """Why no placement was found for ``job`` in ``flavor``: no such GPUs, more than the
    largest cluster holds, a required topology, or not enough free now."""
    totals = cap.total.get(flavor)
    if not totals:
        return explain.NO_FLAVOR
    need = (job.min_workers or job.workers) * job.gpus_per_worker
    if need > max(totals.values()):
        return explain.TOO_LARGE
    if job.topology is not None and job.topology.required:
        return explain.TOPOLOGY
    return explain.CAPACITY

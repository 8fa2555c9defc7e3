"""Check a simulator report against the rules of docs/SCHEDULING.md, independently of the engine.

``check_report(scenario, report)`` replays the report's events in time order and returns every
broken rule as a readable line (an empty list when the report is fine). It shares no code with
the engine, so a bug in the engine cannot hide itself here.

Replay model (docs/SCENARIOS.md): ``admit`` and a growing ``scale`` take GPUs at ``t``; ``finish``
frees them at ``t``; ``preempt``, ``fail`` and ``cancel`` of a running job free them at ``t`` plus
the job's class ``grace_period`` (a stopping job still counts against capacity and quota until
then). Scenario node events apply at their ``at``, before the report's events of that instant.

Checked at every instant: node capacity per flavor; no admit or growth onto a failed or cordoned
node, and no job left running on a failed node; flavor exposed by every node used; one cluster;
each worker on one node; gang size (elastic: ``min_workers``..``workers``); topology ``required``;
queue limit ``N + B`` (``N`` without cohort); cohort pool; only ``can_borrow`` classes borrow;
preemption rules (non-preemptible, ``min_runtime``, priority only within the queue and strictly
lower, reclaim/fair-share only of borrowing queues of the same cohort, rule 3's share tests in
``share.py``; rule 8, no same-cycle swap, in ``swaps.py``); run times; work conservation after
every cycle, and that a within-nominal job one borrowing victim would make room for starts in
time (``conservation.py``); and that the report's per-job summary and totals agree with its
events (``jobs.py``).

The replay itself (``Replay``: allocations, node events, capacity, gang, topology and quota
checks) is in ``replay.py``; the preemption rules checked for each victim and its preemptor in
``victims.py``.

Report conventions the checker holds the simulator to, where docs/SCENARIOS.md leaves room:
a job's and the summary's ``preemptions`` count ``preempt`` events whose reason is a scheduling
decision (reclaim, fair-share, priority), not node failures or ``max_runtime`` stops; a
cancelled or failed job's ``finished_at`` is empty or the time it ended.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpusched.check.jobs import check_job_table
from gpusched.check.replay import Replay
from gpusched.sim.scenario import Scenario

NO_PREEMPTION = ("fifo", "greedy")  # baseline policies that never stop a job for another


def check_report(
    scenario: Scenario, report: Mapping[str, Any], *, conservation: bool = True
) -> list[str]:
    """Every violation of the scheduling rules found in ``report``; empty when it is sound.

    ``conservation=False`` leaves out invariants 5 and 7 (for hand-written reports that test
    another rule). FIFO blocks the line behind its first job that does not fit: work
    conservation is what it gives up by design, so a ``fifo`` report is never held to it; nor
    are the baselines that never preempt (``fifo``, ``greedy``) held to invariant 7.
    """
    replay = Replay(scenario)
    replay.conserving = conservation and report.get("policy") != "fifo"
    # the baselines never preempt: invariant 7 (reclaim) is not theirs to keep
    replay.reclaiming = replay.conserving and report.get("policy") not in NO_PREEMPTION
    events = report.get("events")
    if not isinstance(events, list):
        return ["report: 'events' must be a list"]
    replay.run(events)
    replay.violations += check_job_table(replay.jobs, replay.history, replay.preempt_count, report)
    return replay.violations

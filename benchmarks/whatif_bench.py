"""Time of a what-if replay (issue 22) on the demo's month of history.

    .venv/bin/python benchmarks/whatif_bench.py                 # 14 days, 3 runs
    .venv/bin/python benchmarks/whatif_bench.py --days 30 --runs 1 --db /tmp/x.sqlite3
    .venv/bin/python benchmarks/whatif_bench.py --cohort       # a cohort-quota proposal

Builds (once; reused when the file exists) a SQLite database with ``seed_demo --history 30``,
then times ``queues.services.whatif.compare.compare`` -- both replays of the last ``--days``
days, today's quotas and a proposal that halves team-a's H100 nominal and adds one H100 node --
exactly what the Celery task runs (``--cohort``: a proposal that gives the demo's cohort 8 H100 of
its own instead, so the proposed run goes through the cohort tree's arithmetic, docs/SCHEDULING.md
section 2a), and prints the wall and CPU time (median and worst of
``--runs``), the jobs replayed and the per-queue table of the last run. Target: a 14-day replay
in under 10 s. The replay is single-threaded, so on a shared, loaded machine the wall time
grows with the load while the CPU time does not; the exit status judges the median CPU time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from page_timing import setup_django  # noqa: E402 (after the path set-up)

TARGET_S = 10.0


def seed_once(db: Path) -> float:
    """Seed the demo with 30 days of history unless the file has it already; seconds taken."""
    from django.core.management import call_command

    from queues.models import Job

    call_command("migrate", verbosity=0)
    if Job.objects.exists():
        return 0.0
    started = time.perf_counter()
    call_command("seed_demo", history=30, verbosity=0, stdout=open(os.devnull, "w"))  # noqa: SIM115
    return time.perf_counter() - started


def proposal(days: int) -> Any:
    from queues.models import Cluster, Quota
    from queues.services.snapshot import queue_key
    from queues.services.whatif.proposal import NodeChange, Proposal, QuotaChange

    quota = Quota.objects.select_related("queue__team", "flavor").get(
        queue__team__name="team-a", flavor__name="h100"
    )
    cluster = Cluster.objects.order_by("pk").first()
    assert cluster is not None
    return Proposal(
        days=days,
        quotas=(
            QuotaChange(
                queue_key(quota.queue), "h100", quota.nominal // 2, quota.borrowing_limit, None
            ),
        ),
        nodes=(NodeChange(cluster.name, "h100", 1),),
    )


def cohort_proposal(days: int) -> Any:
    from queues.models import Cohort
    from queues.services.whatif.proposal import CohortQuotaChange, Proposal

    cohort = Cohort.objects.order_by("pk").first()
    assert cohort is not None
    return Proposal(days=days, cohort_quotas=(CohortQuotaChange(cohort.name, "h100", 8),))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=14)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--db", type=Path, default=ROOT / "var" / "bench" / "whatif.sqlite3")
    parser.add_argument(
        "--cohort", action="store_true", help="propose a cohort's own quota instead"
    )
    args = parser.parse_args()
    args.db.parent.mkdir(parents=True, exist_ok=True)
    setup_django(args.db)
    seeded = seed_once(args.db)
    if seeded:
        print(f"seed_demo --history 30: {seeded:.1f} s")

    from django.utils import timezone

    from queues.models import Job
    from queues.services.whatif.compare import compare

    wanted = cohort_proposal(args.days) if args.cohort else proposal(args.days)
    print(f"proposal: {wanted.to_json()}")
    times: list[float] = []
    cpu: list[float] = []
    result: dict[str, Any] = {}
    for _ in range(args.runs):
        started, cpu_started = time.perf_counter(), time.process_time()
        result = compare(wanted, timezone.now(), lambda done: None)
        times.append(time.perf_counter() - started)
        cpu.append(time.process_time() - cpu_started)
    load = os.getloadavg()[0]
    print(f"database: {Job.objects.count()} jobs in the history; load average {load:.2f}")
    print(
        f"what-if over {args.days} days: {result['jobs']} jobs replayed "
        f"(+{result['carried_in']} carried in), both runs"
    )
    print(
        f"wall time: median {statistics.median(times):.2f} s, worst {max(times):.2f} s "
        f"over {args.runs} runs (target < {TARGET_S:.0f} s)"
    )
    print(
        f"CPU time: median {statistics.median(cpu):.2f} s, worst {max(cpu):.2f} s (the replay "
        "is single-threaded: on an idle machine its wall time is its CPU time)"
    )
    print("queue | run | jobs | mean wait s | p95 wait s | GPU-h | borrowed GPU-h | preempt | >1d")
    for row in result["queues"] + result["cohorts"]:
        for run in ("today", "proposed"):
            m = row[run]
            print(
                f"{row['name']} | {run} | {m['jobs']} | {m['mean_wait_s']:.0f} | "
                f"{m['p95_wait_s']:.0f} | {m['gpu_hours']:.1f} | {m['borrowed_gpu_hours']:.1f} | "
                f"{m['preemptions']} | {m['waited_over_a_day']}"
            )
    return 0 if statistics.median(cpu) < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())

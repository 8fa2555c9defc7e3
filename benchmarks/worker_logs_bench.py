"""How long reading a job's workers and logs takes (GET /api/v1/jobs/{id}/logs/ does it at each
request, the job page at each refresh).

    .venv/bin/python benchmarks/worker_logs_bench.py                # 8 workers, 5 runs each
    .venv/bin/python benchmarks/worker_logs_bench.py --workers 32 --runs 3

Kubernetes: the driver's `worker_logs` against kmock's API emulator over real HTTP on this
machine (tests/queues/clusters/k8s_emulator.py: one list of the job's pods, then one pod log read
per worker), each worker's log 20,000 lines; prints the median and worst time for the status
only (tail 0), tail 100 and tail 5000 of every worker, and one worker. Simulated: the generated
log of a 24-hour run (1,441 lines per worker), tail 100 and 5000. No database is needed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuplatform.settings")


def timed(call: Callable[[], object], runs: int) -> tuple[float, float]:
    seconds = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds) * 1000, max(seconds) * 1000


def kubernetes(workers: int, runs: int) -> None:
    from queues.clusters.base import LaunchSpec, WorkerPlacement
    from queues.clusters.kubernetes import KubernetesConnection, KubernetesDriver
    from tests.queues.clusters.k8s_emulator import PODS, TOKEN, EmulatedCluster

    cluster = EmulatedCluster()
    try:
        driver = KubernetesDriver(
            KubernetesConnection(api_server=cluster.url, token=TOKEN, request_timeout_seconds=30)
        )
        spec = LaunchSpec(
            job_id="7", job_name="bench", team="bench", queue="main", service_class="standard",
            image="registry.example.com/train:1", resource_name="nvidia.com/gpu",
            gpus_per_worker=8, gang_size=workers,
            workers=tuple(WorkerPlacement(i, f"node-{i}") for i in range(workers)),
        )  # fmt: skip
        driver.launch(spec)
        text = "".join(f"step {s} loss {1 / (s + 1):.6f} samples/s 1000\n" for s in range(20_000))
        for index in range(workers):
            name = f"bench-7-{index}"
            running = {"name": "worker", "restartCount": 0, "state": {"running": {}}}
            status = {"phase": "Running", "containerStatuses": [running]}
            cluster.set_pod_status("team-bench", name, status)
            cluster.set_pod_log("team-bench", name, text)
        assert len(cluster.stored(PODS)) == workers
        print(f"Kubernetes driver on kmock, {workers} workers, logs of 20,000 lines, {runs} runs:")
        for label, worker, tail in [
            ("status only (tail 0)", None, 0),
            ("every worker, tail 100", None, 100),
            ("every worker, tail 5000", None, 5000),
            ("one worker, tail 100", 0, 100),
        ]:
            median, worst = timed(
                lambda w=worker, t=tail: driver.worker_logs("7", "team-bench", w, t), runs
            )
            print(f"  {label:<26} median {median:8.1f} ms   worst {worst:8.1f} ms")
        driver.close()
    finally:
        cluster.close()


def simulated(runs: int) -> None:
    from queues.clusters.simulated_logs import SimulatedRun, worker_log

    run = SimulatedRun(job_id="7", launched_at=datetime(2026, 3, 2, tzinfo=UTC), speed=60.0,
                       run_seconds=86_400.0, fails=False, world_size=8)  # fmt: skip
    print(f"Simulated log of a 24-hour run, one worker, {runs} runs:")
    for tail in (100, 5000):
        median, worst = timed(lambda t=tail: worker_log(run, 0, "n1", 86_400.0, t), runs)
        print(f"  tail {tail:<21} median {median:8.2f} ms   worst {worst:8.2f} ms")
    failed = replace(run, fails=True)
    assert "RuntimeError" in worker_log(failed, 0, "n1", 86_400.0, 1)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    import django

    django.setup()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    kubernetes(args.workers, args.runs)
    simulated(args.runs)


if __name__ == "__main__":
    main()

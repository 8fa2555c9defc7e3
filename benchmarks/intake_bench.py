"""Benchmark the pure part of the Kueue intake (queues/clusters/adopted/): what each cycle does
per listed kubectl workload (read it: parse, injected_job) and per admission (admit_patch), and
the numbering of the controllers' pods (worker_indexes).

    .venv/bin/python benchmarks/intake_bench.py                  # 5,000 workloads
    .venv/bin/python benchmarks/intake_bench.py --workloads 20000

Prints the microseconds per workload of each step and the total per cycle for that many.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from queues.clusters import adopted


def template(gpus: int) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": "trainer"}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "trainer",
                    "image": "pytorch/pytorch:2.4.0",
                    "resources": {"limits": {"nvidia.com/gpu": str(gpus)}},
                }
            ],
        },
    }


def workloads(n: int) -> list[dict[str, Any]]:
    """A mix of the three kinds, as kubectl users apply them."""
    out: list[dict[str, Any]] = []
    for i in range(n):
        metadata = {
            "name": f"w{i}",
            "namespace": f"team-t{i % 20}",
            "uid": f"uid-{i}",
            "labels": {"kueue.x-k8s.io/queue-name": "main"},
        }
        if i % 3 == 0:
            spec: dict[str, Any] = {"suspend": True, "parallelism": 4, "completions": 4,
                                    "completionMode": "Indexed",
                                    "template": template(8)}  # fmt: skip
            out.append(
                {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": spec}
            )
        elif i % 3 == 1:
            child = {"parallelism": 2, "completions": 2, "template": template(8)}
            spec = {"suspend": True, "replicatedJobs": [
                {"name": "workers", "replicas": 4, "template": {"spec": child}}]}  # fmt: skip
            out.append({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                        "metadata": metadata, "spec": spec})  # fmt: skip
        else:
            roles = {"Master": {"replicas": 1, "template": template(8)},
                     "Worker": {"replicas": 7, "template": template(8)}}  # fmt: skip
            spec = {"runPolicy": {"suspend": True}, "pytorchReplicaSpecs": roles}
            out.append({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
                        "metadata": metadata, "spec": spec})  # fmt: skip
    return out


def timed(label: str, items: Sequence[Any], step: Callable[[Any], object]) -> float:
    started = time.perf_counter()
    for item in items:
        step(item)
    seconds = time.perf_counter() - started
    print(f"{label:<34} {seconds * 1e6 / len(items):8.1f} us each  {seconds * 1e3:8.1f} ms in all")
    return seconds


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=5000)
    args = parser.parse_args(argv)
    objects = workloads(args.workloads)
    labels = {"app.kubernetes.io/managed-by": "gpuplatform", "gpuplatform/job": "1"}
    print(f"{args.workloads} workloads (Jobs of 4, JobSets of 8, PyTorchJobs of 8 pods)")
    per_cycle = timed("parse (every cycle, new ones)", objects, adopted.parse)
    per_cycle += timed("injected_job (every cycle, known)", objects, adopted.injected_job)
    timed(
        "admit_patch (per admission)",
        objects,
        lambda o: adopted.admit_patch(o, job_id="1", labels=labels, nodes=["n1", "n2"]),
    )
    annotations = {adopted.WORKER_OFFSET_ANNOTATION: "0", adopted.PODSET_SIZE_ANNOTATION: "8"}
    pods = [
        {
            "metadata": {
                "name": f"p{i}",
                "labels": {adopted.COMPLETION_INDEX: str(i)},
                "annotations": annotations,
            }
        }
        for i in range(8)
    ]
    timed("worker_indexes (per job, 8 pods)", [pods] * 1000, adopted.worker_indexes)
    print(f"reading {args.workloads} workloads per cycle: {per_cycle * 1e3:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What reading a Kubernetes cluster costs per cycle: LIST every cycle against WATCH.

    .venv/bin/python benchmarks/k8s_sync_bench.py --nodes 1000 --pods 10000 --cycles 5

Starts kmock's Kubernetes emulator over real HTTP on 127.0.0.1 (tests/queues/clusters: with the
resource versions, resumable watches and bookmarks a real API server has), seeds ``--nodes``
nodes of 8 GPUs and ``--pods`` pods (90 % the platform's, one worker each, 10 % other workloads
holding GPUs), then measures the driver's ``sync`` (queues/clusters/kubernetes.py):

- ``list``: the path before watches: a new driver every cycle, so every sync LISTs all nodes and
  all pods;
- ``watch``: one driver kept across cycles (as the Celery worker keeps it, DriverPool): the first
  sync LISTs, each later one WATCHes from the last resourceVersion. Before each of these cycles
  ``--churn`` of the pods change status (1 %: a steady cluster).

For each: wall milliseconds per cycle (a watch waits ``--idle`` seconds of silence before it
counts the backlog as read; the kinds are read side by side: included once), the CPU
milliseconds of the driver's process (parsing JSON, building the state; the emulator runs in a
process of its own), bytes read from the API server and requests per cycle. Medians over
``--cycles`` cycles.

Nothing here is a test: it prints numbers.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuplatform.settings")


def seed(cluster: Any, nodes: int, pods: int) -> None:
    from tests.queues.clusters.k8s_emulator import NODES, PODS

    def store() -> None:
        emulator = cluster.emulator
        for i in range(nodes):
            name = f"gpu-{i:04d}"
            node = {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "spec": {},
                "status": {
                    "allocatable": {"cpu": "96", "memory": "1056Gi", "nvidia.com/gpu": "8"},
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }
            emulator.objects[NODES, None, name] = node
            emulator.record(NODES, "ADDED", node)
        for i in range(pods):
            pod = _pod(i, nodes)
            namespace = pod["metadata"]["namespace"]
            emulator.objects[PODS, namespace, pod["metadata"]["name"]] = pod
            emulator.record(PODS, "ADDED", pod)

    cluster.call(store)


def _pod(i: int, nodes: int) -> dict[str, Any]:
    ours = i % 10 != 0
    job = i // 2
    labels = (
        {
            "app.kubernetes.io/managed-by": "gpuplatform",
            "gpuplatform/job": str(job),
            "gpuplatform/worker": str(i % 2),
        }
        if ours
        else {"app": "inference"}
    )
    annotations = {"gpuplatform/job-id": str(job)} if ours else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"train-{job}-{i % 2}" if ours else f"serve-{i}",
            "namespace": "team-a" if ours else "inference",
            "labels": labels,
            "annotations": annotations,
        },
        "spec": {
            "nodeName": f"gpu-{i % nodes:04d}",
            "containers": [
                {
                    "name": "main",
                    "image": "pytorch/pytorch:2.4.0",
                    "resources": {"limits": {"nvidia.com/gpu": "1", "cpu": "8"}},
                }
            ],
        },
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }


def churn(cluster: Any, pods: int, count: int, cycle: int) -> None:
    """`count` pods change status (a restart count, a condition flip), as on a steady cluster."""
    from tests.queues.clusters.k8s_emulator import PODS

    def change() -> None:
        emulator = cluster.emulator
        for k in range(count):
            i = (cycle * count + k) * 7919 % pods
            raw = _pod(i, 1)
            key = (PODS, raw["metadata"]["namespace"], raw["metadata"]["name"])
            obj = emulator.objects[key]
            obj.patch({"status": {"containerStatuses": [{"name": "main", "restartCount": cycle}]}})
            emulator.record(PODS, "MODIFIED", obj.raw)

    cluster.call(change)


def serve(conn: Any, nodes: int, pods: int) -> None:
    """The emulator's process: seed, send the URL, then change pods when asked."""
    from tests.queues.clusters.k8s_emulator import EmulatedCluster

    cluster = EmulatedCluster()
    try:
        started = time.perf_counter()
        seed(cluster, nodes, pods)
        conn.send((cluster.url, time.perf_counter() - started))
        while True:
            message = conn.recv()
            if message is None:
                break
            churn(cluster, pods, *message)
            conn.send("changed")
    finally:
        cluster.close()


def measure(driver: Any) -> tuple[float, float, int, int]:
    before = [(c.stats.bytes, c.stats.lists + c.stats.watches) for c in driver.caches]
    wall, cpu = time.perf_counter(), time.process_time()
    state = driver.sync()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert state.nodes and state.workloads
    after = [(c.stats.bytes, c.stats.lists + c.stats.watches) for c in driver.caches]
    read = sum(a[0] - b[0] for a, b in zip(after, before, strict=True))
    requests = sum(a[1] - b[1] for a, b in zip(after, before, strict=True))
    return wall * 1000, cpu * 1000, read, requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--cycles", type=int, default=5)
    parser.add_argument("--churn", type=float, default=0.01, help="share of pods changing")
    parser.add_argument("--idle", type=float, default=0.25, help="watch idle seconds")
    args = parser.parse_args()

    ours, theirs = multiprocessing.get_context("spawn").Pipe()
    server = multiprocessing.get_context("spawn").Process(
        target=serve, args=(theirs, args.nodes, args.pods), daemon=True
    )
    server.start()
    url, seconds = ours.recv()
    print(f"seeded {args.nodes} nodes, {args.pods} pods in {seconds:.1f} s")

    import django

    django.setup()
    from queues.clusters.kubernetes import KubernetesConnection, KubernetesDriver
    from tests.queues.clusters.k8s_emulator import TOKEN

    try:
        connection = KubernetesConnection(
            api_server=url,
            token=TOKEN,
            request_timeout_seconds=120,
            watch_idle_seconds=args.idle,
        )
        rows: dict[str, list[tuple[float, float, int, int]]] = {"list": [], "watch": []}
        for _ in range(args.cycles):
            fresh = KubernetesDriver(connection)
            try:
                rows["list"].append(measure(fresh))
            finally:
                fresh.close()
        kept = KubernetesDriver(connection)
        try:
            first = measure(kept)
            changing = max(1, round(args.pods * args.churn))
            for cycle in range(args.cycles):
                ours.send((changing, cycle + 1))
                ours.recv()
                rows["watch"].append(measure(kept))
        finally:
            kept.close()
    finally:
        ours.send(None)
        server.join(timeout=30)

    print(
        f"\n{args.nodes} nodes, {args.pods} pods; watch cycles with {changing} pods changed "
        f"each ({args.churn:.0%}); idle {args.idle} s per watched kind; medians of "
        f"{args.cycles} cycles; load average {os.getloadavg()[0]:.1f}\n"
    )
    print("| path | wall ms/cycle | client CPU ms/cycle | bytes/cycle | requests/cycle |")
    print("|---|---:|---:|---:|---:|")
    for name, values in rows.items():
        wall, cpu, read, requests = (
            statistics.median(column) for column in zip(*values, strict=True)
        )
        print(f"| {name} | {wall:,.0f} | {cpu:,.0f} | {read:,.0f} | {requests:.0f} |")
    wall, cpu, read, requests = first
    print(f"| watch, first sync (LIST) | {wall:,.0f} | {cpu:,.0f} | {read:,.0f} | {requests} |")


if __name__ == "__main__":
    main()

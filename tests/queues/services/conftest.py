"""A small live world: one simulated cluster with two 8-GPU H100 nodes, two teams in one
cohort (8 H100 nominal each), three service classes, and a controllable cycle clock."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from types import SimpleNamespace
from typing import Any

import pytest

from queues.models import Cluster, Job, Node, ServiceClass
from queues.services import submit_job
from tests.queues.clusters.k8s_emulator import TOKEN, EmulatedCluster
from tests.queues.services.helpers import T0, build_world, later

H100_NODE_LABELS = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "rack": "r1"}


@pytest.fixture(autouse=True)
def queued_cycles(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Submissions queue a cycle through Celery; here tests run cycles themselves."""
    queued: list[int] = []
    from queues import tasks

    monkeypatch.setattr(tasks.run_scheduling_cycle, "delay", lambda: queued.append(1))
    return queued


@pytest.fixture(autouse=True)
def _simulation(settings: Any) -> None:
    settings.SIMULATION_SPEED = 60.0
    settings.SIMULATION_FAILURE_RATE = 0.0


@pytest.fixture
def world(db: None) -> SimpleNamespace:
    return build_world()


@pytest.fixture
def submit(world: SimpleNamespace) -> Callable[..., Job]:
    """``submit(team="a", gpus=8, workers=1, cls="standard", at=T0, **fields)``."""

    def make(
        *,
        team: str = "a",
        gpus: int = 8,
        workers: int = 1,
        cls: str = "standard",
        at: datetime = T0,
        name: str = "train",
        **fields: Any,
    ) -> Job:
        fields.setdefault("duration_hint", 3600)
        return submit_job(
            owner=world.alice if team == "a" else world.bob,
            queue=world.queue_a if team == "a" else world.queue_b,
            service_class=getattr(world, cls),
            name=name,
            image="pytorch/pytorch:2.4.0",
            flavors=[world.h100],
            workers=workers,
            gpus_per_worker=gpus,
            now=at,
            **fields,
        )

    return make


@pytest.fixture
def reload() -> Callable[[Job], Job]:
    return lambda job: Job.objects.select_related("runtime").get(pk=job.pk)


@pytest.fixture
def api() -> Iterator[EmulatedCluster]:
    """kmock's Kubernetes API emulator with two 8-GPU H100 nodes (a module may define its own)."""
    emulated = EmulatedCluster()
    try:
        emulated.add_node("gpu-a", {"nvidia.com/gpu": "8"}, H100_NODE_LABELS)
        emulated.add_node("gpu-b", {"nvidia.com/gpu": "8"}, H100_NODE_LABELS)
        yield emulated
    finally:
        emulated.close()


@pytest.fixture
def k8s_world(world: SimpleNamespace, api: EmulatedCluster, cycle: Callable[..., Any]) -> Any:
    """The world's cluster made a Kubernetes cluster on `api`, its nodes read by one cycle.
    A Kubernetes cluster runs in real time: class spot's grace period is 30 s there too."""
    ServiceClass.objects.filter(name="spot").update(grace_period=30)
    Node.objects.filter(cluster=world.cluster).delete()
    Cluster.objects.filter(pk=world.cluster.pk).update(
        driver=Cluster.Driver.KUBERNETES, api_url=api.url, token=TOKEN, verify_tls=False
    )
    cycle(later(-60))  # the nodes, read from the API (submissions are checked against them)
    return world

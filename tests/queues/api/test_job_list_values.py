"""The jobs list reads its page as values (``JOB_ROW``, ``JobSerializer.rows_json``): its whole
answer, byte for byte, is what DRF's own list makes of the jobs read as instances (the way it
was read before, issue 27), for every filter, ordering and page, for an admin and for members."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from rest_framework import mixins, serializers
from rest_framework.test import APIClient, APIRequestFactory, force_authenticate

from queues.api.job_serializers import JobSerializer
from queues.api.views import JobViewSet
from queues.models import Cluster, Flavor, Job, JobRuntime, Queue, ServiceClass

pytestmark = pytest.mark.django_db


class _GenericJobSerializer(JobSerializer):
    """DRF's own answer for each declared field (its generic walk of the sources)."""

    def to_representation(self, job: Job) -> dict[str, Any]:
        return serializers.ModelSerializer.to_representation(self, job)


class _InstancesJobViewSet(JobViewSet):
    """The list as DRF's ListModelMixin makes it of the jobs as model instances."""

    list = mixins.ListModelMixin.list  # type: ignore[assignment]

    def get_queryset(self) -> Any:
        self.action = "retrieve"  # the full instances' read
        try:
            return super().get_queryset()
        finally:
            self.action = "list"

    def get_serializer_class(self) -> Any:
        return _GenericJobSerializer


def varied_jobs(
    make_job: Callable[..., Job], owners: list[User], queues: list[Queue], cluster: Cluster,
    flavors: list[Flavor], classes: list[ServiceClass],
) -> None:  # fmt: skip
    """Pending (with and without an explanation, without a runtime row), admitted, running
    (elastic, with a topology, a placement, preempted before), finished in every way; several
    flavor choices, classes, owners and queues; arrays and specs."""
    now = timezone.now()
    states = ("pending", "admitted", "running", "succeeded", "failed", "cancelled", "preempted")
    for i in range(30):
        state = states[i % len(states)]
        fields: dict[str, Any] = {
            "queue": queues[i % len(queues)], "owner": owners[i % len(owners)],
            "name": f"job-{i % 9}", "state": state, "service_class": classes[i % len(classes)],
            "submitted_at": now - timedelta(minutes=(i * 7) % 23, seconds=i),
            "workers": 1 + i % 4, "gpus_per_worker": 1 + i % 2,
        }  # fmt: skip
        if i % 5 == 0:
            fields.update(min_workers=1, estimated_runtime=3600 + i, checkpoint_interval=300)
        if i % 4 == 1:
            fields.update(topology_level="rack", topology_mode=("required", "preferred")[i % 2])
        if i % 6 == 2:
            fields.update(array_id=100 + i // 6, array_index=i % 3, command=["python", "t.py"])
        if i % 3 == 0:
            fields["spec"] = {"args": ["--n", str(i)], "cpu": "4", "labels": {"k": "v"}}
        if state not in ("pending", "preempted"):
            fields.update(admitted_at=now - timedelta(minutes=3))
        if state in ("running", "succeeded", "failed", "cancelled"):
            fields.update(started_at=now - timedelta(minutes=2), preemption_count=i % 3)
            fields.update(cluster=cluster, placement={"n1": 1, "n2": fields["workers"] - 1})
            fields.update(current_workers=fields["workers"])
        if state in ("succeeded", "failed", "cancelled"):
            fields.update(finished_at=now - timedelta(seconds=30 + i))
        job = make_job(**fields)
        job.set_acceptable_flavors(flavors[i % 2 :] + flavors[: i % 2])
        if i % 7 == 6:
            continue  # no runtime row
        runtime = JobRuntime(job=job)
        if state == "pending" and i % 2 == 0:
            runtime.pending_reason = "quota"
            runtime.pending_message = f"waits for quota ({i})"
            runtime.estimated_start = now + timedelta(minutes=i, microseconds=i)
        elif state != "pending":
            runtime.flavor = flavors[i % 2]
            runtime.pending_message = "left over"  # not shown: not pending
        runtime.save()


QUERIES: list[dict[str, Any]] = [
    {},
    {"page_size": 7},
    {"page_size": 7, "page": 3},
    {"page_size": 7, "page": "last"},
    {"page": 9},  # out of range: 404
    {"page_size": 500},
    {"state": ["pending", "running"]},
    {"state": "bogus"},  # a 400
    {"mine": "true"},
    {"owner": "researcher_b"},
    {"service_class": "batch"},
    {"submitted_after": "2000-01-01T00:00:00Z", "ordering": "name"},
    {"submitted_before": "2000-01-01T00:00:00Z"},
    *({"ordering": order} for order in ("id", "-id", "state", "-state", "name", "-name")),
    {"ordering": "submitted_at", "page_size": 11, "page": 2},
    {"ordering": "-name,id", "state": "succeeded"},
]


def test_the_jobs_list_is_byte_for_byte_what_drf_makes_of_the_jobs_as_instances(
    api: Callable[[User | None], APIClient], make_job: Callable[..., Job], platform_admin: User,
    researcher_a: User, researcher_b: User, queue_a: Queue, queue_b: Queue,
    sim_cluster: Cluster, flavor_h100: Flavor, service_class_std: ServiceClass,
) -> None:  # fmt: skip
    a100 = Flavor.objects.create(name="a100-80gb", resource="nvidia.com/gpu", gpu_equivalent=1.0)
    batch = ServiceClass.objects.get(pk=service_class_std.pk)
    batch.pk, batch.name = None, "batch"
    batch.save()
    varied_jobs(
        make_job, [researcher_a, researcher_b, platform_admin], [queue_a, queue_b], sim_cluster,
        [a100, flavor_h100], [service_class_std, batch],
    )  # fmt: skip
    instances = _InstancesJobViewSet.as_view({"get": "list"})
    factory = APIRequestFactory()
    checked = 0
    for user in (platform_admin, researcher_a, researcher_b):
        client = api(user)
        for params in [*QUERIES, {"queue": queue_a.pk}, {"team": queue_b.team.name}]:
            response = client.get("/api/v1/jobs/", params)
            request = factory.get("/api/v1/jobs/", params)
            force_authenticate(request, user=user)
            before = instances(request)
            before.render()
            assert response.status_code == before.status_code, (user, params)
            assert response.content == before.content, (user, params)
            checked += response.status_code == 200 and bool(response.json()["results"])
    assert checked > 40

"""Submit a demo ``JobRequest`` through the live service, on behalf of its demo researcher."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model

from demo.workload import JobRequest, estimated_runtime
from queues.models import Flavor, Job, Queue, ServiceClass
from queues.services import submit_job

IMAGE = "registry.example.org/research/trainer:1.4"


def command_of(request: JobRequest) -> list[str]:
    return ["python", "-m", request.name.rsplit("-", 1)[0].replace("-", "_")]


class Submitter:
    """Turns a ``JobRequest`` into ``submit_job`` arguments (looked up once, then cached)."""

    def __init__(self) -> None:
        self.users: dict[str, Any] = {}
        self.queues = {(q.team.name, q.name): q for q in Queue.objects.select_related("team")}
        self.classes = {c.name: c for c in ServiceClass.objects.all()}
        self.flavors = {f.name: f for f in Flavor.objects.all()}

    def queue_of(self, request: JobRequest) -> Queue | None:
        return self.queues.get((request.team, request.queue))

    def submit(self, request: JobRequest, now: datetime) -> Job:
        user = self.users.get(request.user)
        if user is None:
            user = get_user_model().objects.get(username=request.user)
            self.users[request.user] = user
        return submit_job(
            owner=user,
            queue=self.queues[(request.team, request.queue)],
            service_class=self.classes[request.service_class],
            name=request.name,
            image=IMAGE,
            command=command_of(request),
            flavors=[self.flavors[name] for name in request.flavors],
            workers=request.workers,
            gpus_per_worker=request.gpus_per_worker,
            estimated_runtime=estimated_runtime(request),
            duration_hint=request.runtime_seconds,
            now=now,
        )

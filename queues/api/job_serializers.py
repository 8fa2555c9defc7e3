"""Jobs through the API: what a job looks like (``JobSerializer``), what a submission may say
(``JobSubmitSerializer``, also the body of ``jobs/estimate``) and the job's events.

The submission is validated here with field-named errors (unknown flavor, a gang no cluster can
ever hold, min_workers above workers, a class the queue refuses, a queue the caller may not use),
then ``queues.services.submit_job`` creates it.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from rest_framework import serializers

from gpuplatform import access
from gpuplatform.rest import MAX_INT, StrictCharField, bounded_int, reject_nul
from queues.models import Flavor, Job, JobEvent, Node, Queue, ServiceClass

MAX_WORKERS = 100_000
MAX_GPUS_PER_WORKER = 10_000
MAX_FLAVORS = 20


class JobSerializer(serializers.ModelSerializer[Job]):
    queue_name = serializers.CharField(source="queue.__str__", read_only=True)
    team = serializers.CharField(source="queue.team.name", read_only=True)
    owner = serializers.CharField(source="owner.username", read_only=True)
    service_class = serializers.CharField(source="service_class.name", read_only=True)
    flavors = serializers.SerializerMethodField(
        help_text="Acceptable flavors, most preferred first."
    )
    cluster = serializers.CharField(source="cluster.name", read_only=True, allow_null=True)
    command = serializers.ListField(child=serializers.CharField(), read_only=True)
    placement = serializers.DictField(
        child=serializers.IntegerField(), read_only=True, help_text="Node name -> worker count."
    )
    topology_mode = serializers.CharField(
        read_only=True, help_text="required, preferred, or empty when topology_level is empty."
    )
    pending_reason = serializers.SerializerMethodField()
    pending_message = serializers.SerializerMethodField()
    estimated_start = serializers.SerializerMethodField()

    class Meta:
        model = Job
        fields = [
            "id",
            "name",
            "queue",
            "queue_name",
            "team",
            "owner",
            "service_class",
            "flavors",
            "image",
            "command",
            "workers",
            "min_workers",
            "gpus_per_worker",
            "topology_level",
            "topology_mode",
            "estimated_runtime",
            "checkpoint_interval",
            "state",
            "submitted_at",
            "admitted_at",
            "started_at",
            "finished_at",
            "cluster",
            "placement",
            "current_workers",
            "preemption_count",
            "pending_reason",
            "pending_message",
            "estimated_start",
        ]
        read_only_fields = fields

    def get_flavors(self, job: Job) -> list[str]:
        links = sorted(job.flavor_links.all(), key=lambda link: link.rank)  # prefetched
        return [link.flavor.name for link in links]

    def _runtime(self, job: Job) -> Any:
        return getattr(job, "runtime", None)  # select_related; None for a job without one

    def get_pending_reason(self, job: Job) -> str:
        runtime = self._runtime(job)
        return runtime.pending_reason if runtime and job.state == Job.State.PENDING else ""

    def get_pending_message(self, job: Job) -> str:
        runtime = self._runtime(job)
        return runtime.pending_message if runtime and job.state == Job.State.PENDING else ""

    def get_estimated_start(self, job: Job) -> str | None:
        runtime = self._runtime(job)
        if runtime is None or job.state != Job.State.PENDING or runtime.estimated_start is None:
            return None
        return serializers.DateTimeField().to_representation(runtime.estimated_start)


class JobEventSerializer(serializers.ModelSerializer[JobEvent]):
    data = serializers.DictField(read_only=True)

    class Meta:
        model = JobEvent
        fields = ["id", "at", "kind", "message", "data"]
        read_only_fields = fields


def capacity_by_flavor(flavors: list[Flavor]) -> dict[str, tuple[int, int]]:
    """Per flavor name: (total units over every cluster's nodes, most units on one node)."""
    names = {flavor.name for flavor in flavors}
    total: dict[str, int] = defaultdict(int)
    largest: dict[str, int] = defaultdict(int)
    for capacity in Node.objects.values_list("capacity", flat=True):
        if not isinstance(capacity, dict):
            continue
        for name, units in capacity.items():
            if name in names and isinstance(units, int):
                total[name] += units
                largest[name] = max(largest[name], units)
    return {name: (total[name], largest[name]) for name in names}


class JobSubmitSerializer(serializers.Serializer[Job]):
    """A job submission (POST /jobs/ and /jobs/estimate/)."""

    queue = serializers.PrimaryKeyRelatedField(
        queryset=Queue.objects.all(), help_text="Id of a queue of your team."
    )
    service_class = serializers.SlugRelatedField(
        slug_field="name", queryset=ServiceClass.objects.all(), help_text="Service class name."
    )
    flavors = serializers.SlugRelatedField(
        slug_field="name",
        queryset=Flavor.objects.all(),
        many=True,
        allow_empty=False,
        help_text="Acceptable flavor names, most preferred first.",
    )
    name = serializers.CharField(max_length=63, help_text="DNS label, e.g. train-llama.")
    image = serializers.CharField(max_length=500)
    command = serializers.ListField(
        child=StrictCharField(max_length=4096, allow_blank=True, trim_whitespace=False),
        max_length=256,
        required=False,
        default=list,
    )
    workers = bounded_int(min_value=1, max_value=MAX_WORKERS, default=1)
    min_workers = bounded_int(
        min_value=1,
        max_value=MAX_WORKERS,
        required=False,
        allow_null=True,
        default=None,
        help_text="Makes the job elastic: it may start with this many workers.",
    )
    gpus_per_worker = bounded_int(min_value=1, max_value=MAX_GPUS_PER_WORKER, default=1)
    topology_level = serializers.CharField(
        max_length=63, required=False, allow_blank=True, default=""
    )
    topology_mode = serializers.ChoiceField(
        choices=Job.TopologyMode.choices, required=False, allow_blank=True, default=""
    )
    estimated_runtime = bounded_int(
        min_value=1, required=False, allow_null=True, default=None, help_text="Seconds."
    )
    checkpoint_interval = bounded_int(
        min_value=1, required=False, allow_null=True, default=None, help_text="Seconds."
    )
    duration_hint = bounded_int(
        min_value=1,
        max_value=MAX_INT,
        required=False,
        allow_null=True,
        default=None,
        help_text="Simulated clusters only: seconds the job runs before it succeeds.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        request = self.context.get("request")
        if request is not None:  # queues the caller cannot see do not exist for them
            self.fields["queue"].queryset = access.visible_queues(request.user)

    def validate_command(self, command: list[str]) -> list[str]:
        reject_nul(command)
        return command

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        errors: dict[str, str] = {}
        user = self.context["request"].user
        queue: Queue = attrs["queue"]
        if not access.submittable_queues(user).filter(pk=queue.pk).exists():
            errors["queue"] = (
                f"Queue {queue} is closed to new jobs."
                if not queue.is_open
                else f"You may not submit to queue {queue}: it belongs to another team."
            )
        elif not queue.accepts_service_class(attrs["service_class"]):
            accepted = ", ".join(c.name for c in queue.allowed_service_classes.all())
            errors["service_class"] = (
                f"Queue {queue} does not accept the {attrs['service_class'].name!r} class; "
                f"it accepts: {accepted}."
            )
        min_workers, workers = attrs.get("min_workers"), attrs["workers"]
        if min_workers is not None and min_workers > workers:
            errors["min_workers"] = (
                f"min_workers ({min_workers}) cannot exceed workers ({workers})."
            )
        flavors: list[Flavor] = attrs["flavors"]
        names = [flavor.name for flavor in flavors]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            errors["flavors"] = f"Each flavor may appear once; repeated: {', '.join(repeated)}."
        elif len(flavors) > MAX_FLAVORS:
            errors["flavors"] = f"At most {MAX_FLAVORS} acceptable flavors."
        elif "min_workers" not in errors:
            errors.update(self._capacity_errors(flavors, min_workers or workers, attrs))
        if errors:
            raise serializers.ValidationError(errors)
        return attrs

    @staticmethod
    def _capacity_errors(
        flavors: list[Flavor], workers: int, attrs: dict[str, Any]
    ) -> dict[str, str]:
        """A gang no cluster could ever hold is refused now rather than pending forever."""
        gpus = attrs["gpus_per_worker"]
        capacity = capacity_by_flavor(flavors)
        if any(total >= workers * gpus and largest >= gpus for total, largest in capacity.values()):
            return {}
        summary = ", ".join(
            f"{name}: {total} in total, at most {largest} on one node"
            for name, (total, largest) in sorted(capacity.items())
        )
        if not any(largest >= gpus for _, largest in capacity.values()):
            return {
                "gpus_per_worker": (
                    f"No node can hold one worker of {gpus} GPU(s) of the acceptable flavors "
                    f"({summary})."
                )
            }
        return {
            "workers": (
                f"{workers} worker(s) x {gpus} GPU(s) = {workers * gpus} is more than all "
                f"clusters hold of the acceptable flavors ({summary})."
            )
        }

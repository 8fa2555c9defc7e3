"""Jobs through the API: what a job looks like (``JobSerializer``), what a submission may say
(``JobSubmitSerializer``, also the body of ``jobs/estimate``) and the job's events.

The serializer only parses a submission (types, names of flavors and classes, the queue among
those the caller can see); its rules are queues/models/job_rules.py's, checked in ``validate``
(the same errors as the submit form's), then ``queues.services.submit_job`` creates the job.
"""

from __future__ import annotations

from datetime import datetime
from functools import cached_property
from typing import Any, NamedTuple

from django.core.validators import MaxValueValidator, MinValueValidator
from django.utils import timezone
from django.utils.encoding import smart_str
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from gpuplatform import access
from gpuplatform.rest import FieldTemplateMixin, StrictCharField, reject_nul
from queues.models import Cluster, Flavor, Job, JobEvent, Queue, ServiceClass, catalog, job_spec
from queues.models import job_rules as rules
from queues.models.jobs import ranked_flavors

SPEC_HELP = {
    "args": 'The container\'s arguments, after the command, e.g. ["--epochs", "3"].',
    "env": 'Environment: [{"name": "N", "value": "V"}] or [{"name": "N", "valueFrom": '
    '{"secretKeyRef": {"name": "SECRET", "key": "KEY"}}}]; not WORLD_SIZE, RANK, MASTER_ADDR, '
    "MASTER_PORT, GPUPLATFORM_JOB_ID (the platform's).",
    "volumes": 'Volumes: [{"name": "data", "mountPath": "/data", "readOnly": true, '
    '"persistentVolumeClaim": {"claimName": "datasets"}}]; or "configMap": {"name": ...}, '
    '"secret": {"secretName": ...}, "emptyDir": {"medium": "Memory", "sizeLimit": "10Gi"}.',
    "shm_size": "Size of /dev/shm (an emptyDir of medium Memory), e.g. 16Gi.",
    "cpu": "CPU request per worker, e.g. 8 or 500m.",
    "memory": "Memory request per worker, e.g. 64Gi.",
    "cpu_limit": "CPU limit per worker (default: the request; at least the request).",
    "memory_limit": "Memory limit per worker (default: the request; at least the request).",
    "image_pull_secret": "Name of a Secret of the team's namespace to pull the image with.",
    "tolerations": 'Kubernetes tolerations: [{"key": "k", "operator": "Equal", "value": "v", '
    '"effect": "NoSchedule"}].',
    "working_dir": "The container's working directory (an absolute path).",
    "labels": "Extra pod labels (not gpuplatform/*, kueue.x-k8s.io/*, "
    "app.kubernetes.io/managed-by).",
    "annotations": "Extra pod annotations (not the platform's or Kueue's keys).",
    "host_network": "Use the node's network (only in a service class that allows it).",
}


@extend_schema_field(OpenApiTypes.ANY)
class SpecValue(serializers.Field):  # type: ignore[type-arg]
    """One key of the job's spec (``Job.spec``), with its default when not given."""

    def __init__(self, key: str, **kwargs: Any) -> None:
        super().__init__(source="spec", read_only=True, help_text=SPEC_HELP[key], **kwargs)
        self.key = key

    def to_representation(self, value: Any) -> Any:
        return job_spec.value(value or {}, self.key)


def spec_input(key: str) -> serializers.JSONField:
    return serializers.JSONField(required=False, help_text=SPEC_HELP[key])


class JobSerializer(FieldTemplateMixin, serializers.ModelSerializer[Job]):
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
    # the job's spec (Job.spec), key by key as a submission gives it
    args = SpecValue("args")
    env = SpecValue("env")
    volumes = SpecValue("volumes")
    shm_size = SpecValue("shm_size")
    cpu = SpecValue("cpu")
    memory = SpecValue("memory")
    cpu_limit = SpecValue("cpu_limit")
    memory_limit = SpecValue("memory_limit")
    image_pull_secret = SpecValue("image_pull_secret")
    working_dir = SpecValue("working_dir")
    tolerations = SpecValue("tolerations")
    labels = SpecValue("labels")
    annotations = SpecValue("annotations")
    host_network = SpecValue("host_network")

    class Meta:
        model = Job
        fields = [
            "id",
            "name",
            "array_id",
            "array_index",
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
            *job_spec.SPEC_FIELDS,
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

    def to_representation(self, job: Job) -> dict[str, Any]:
        """The job as JSON, each value read directly: DRF's own ``to_representation`` reads
        every declared field's source through a generic walk (callable checks at each step, 45
        fields a job: most of the jobs list's serialization). The declared fields above still
        say what each key is (the schema) and give the keys' order; datetimes are formatted by
        DRF's field. ``tests/queues/api/test_job_list_reads.py`` checks that this is DRF's own
        answer for jobs of every kind."""
        runtime = getattr(job, "runtime", None)  # select_related; None for a job without one
        queue = job.queue
        row = JobRow(
            job.pk, job.name, job.array_id, job.array_index, job.queue_id, queue.name,
            queue.team.name, job.owner.username, job.service_class.name, job.image, job.command,
            job.workers, job.min_workers, job.gpus_per_worker, job.topology_level,
            job.topology_mode, job.estimated_runtime, job.checkpoint_interval, job.spec,
            job.state, job.submitted_at, job.admitted_at, job.started_at, job.finished_at,
            job.cluster_id, job.placement, job.current_workers, job.preemption_count,
            None if runtime is None else runtime.pending_reason,
            None if runtime is None else runtime.pending_message,
            None if runtime is None else runtime.estimated_start,
        )  # fmt: skip
        cluster = job.cluster.name if job.cluster_id is not None else None
        return self._json(row, self.get_flavors(job), cluster)

    def rows_json(self, rows: list[JobRow]) -> list[dict[str, Any]]:
        """The jobs read as values (``JOB_ROW``, the jobs list) as JSON: the same answer as
        ``to_representation`` of the jobs as instances (building them, with their queue, team,
        owner, class and runtime, was about 40 % of the list's CPU). Their flavors and
        clusters' names are read by a query each (none for no job / no cluster)."""
        ranked = ranked_flavors([row.id for row in rows])
        cluster_ids = {row.cluster_id for row in rows if row.cluster_id is not None}
        clusters = (
            dict(Cluster.objects.filter(pk__in=cluster_ids).values_list("pk", "name"))
            if cluster_ids
            else {}
        )
        return [
            self._json(
                row,
                [name for _, name in ranked.get(row.id, [])],
                None if row.cluster_id is None else clusters.get(row.cluster_id),
            )
            for row in rows
        ]

    def _json(self, row: JobRow, flavors: list[str], cluster: str | None) -> dict[str, Any]:
        pending = row.pending_reason is not None and row.state == Job.State.PENDING
        moment = self._moment
        spec = row.spec
        values: dict[str, Any] = {
            "id": row.id,
            "name": row.name,
            "array_id": row.array_id,
            "array_index": row.array_index,
            "queue": row.queue,
            "queue_name": f"{row.team}/{row.queue_name}",  # Queue.__str__
            "team": row.team,
            "owner": row.owner,
            "service_class": row.service_class,
            "flavors": flavors,
            "image": row.image,
            "command": _texts(row.command),
            "workers": row.workers,
            "min_workers": row.min_workers,
            "gpus_per_worker": row.gpus_per_worker,
            "topology_level": row.topology_level,
            "topology_mode": row.topology_mode,
            "estimated_runtime": row.estimated_runtime,
            "checkpoint_interval": row.checkpoint_interval,
            **{
                key: None if spec is None else job_spec.value(spec, key)
                for key in job_spec.SPEC_FIELDS
            },
            "state": row.state,
            "submitted_at": moment(row.submitted_at),
            "admitted_at": moment(row.admitted_at),
            "started_at": moment(row.started_at),
            "finished_at": moment(row.finished_at),
            "cluster": cluster,
            "placement": _counts(row.placement),
            "current_workers": row.current_workers,
            "preemption_count": row.preemption_count,
            "pending_reason": row.pending_reason if pending else "",
            "pending_message": row.pending_message if pending else "",
            "estimated_start": moment(row.estimated_start) if pending else None,
        }
        return {name: values[name] for name in self.field_names()}

    @cached_property
    def _moment(self) -> Any:
        """DRF's datetime format (ISO 8601, "Z" for UTC) in the current timezone, read once
        (DRF's own field reads it at each value, through asgiref's context-local storage)."""
        field = serializers.DateTimeField(default_timezone=timezone.get_current_timezone())
        return field.to_representation

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


class JobRow(NamedTuple):
    """A job as its JSON reads it (``JobSerializer``): its own columns and, of the rows it
    relates to, the names and the pending explanation (None there: no runtime row)."""

    id: int
    name: str
    array_id: int | None
    array_index: int | None
    queue: int
    queue_name: str  # the queue's own name (the JSON's queue_name is team/name)
    team: str
    owner: str
    service_class: str
    image: str
    command: Any
    workers: int
    min_workers: int | None
    gpus_per_worker: int
    topology_level: str
    topology_mode: str
    estimated_runtime: int | None
    checkpoint_interval: int | None
    spec: Any
    state: str
    submitted_at: datetime
    admitted_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    cluster_id: int | None
    placement: Any
    current_workers: int
    preemption_count: int
    pending_reason: str | None
    pending_message: str | None
    estimated_start: datetime | None


JOB_ROW = (  # JobRow's fields, in order, as values_list reads them
    "pk", "name", "array_id", "array_index", "queue_id", "queue__name", "queue__team__name",
    "owner__username", "service_class__name", "image", "command", "workers", "min_workers",
    "gpus_per_worker", "topology_level", "topology_mode", "estimated_runtime",
    "checkpoint_interval", "spec", "state", "submitted_at", "admitted_at", "started_at",
    "finished_at", "cluster_id", "placement", "current_workers", "preemption_count",
    "runtime__pending_reason", "runtime__pending_message", "runtime__estimated_start",
)  # fmt: skip


def _texts(items: Any) -> Any:
    """A ``ListField(child=CharField())``'s representation."""
    if items is None:
        return None
    return [None if item is None else str(item) for item in items]


def _counts(mapping: Any) -> Any:
    """A ``DictField(child=IntegerField())``'s representation."""
    if mapping is None:
        return None
    return {str(key): None if value is None else int(value) for key, value in mapping.items()}


class JobEventSerializer(serializers.ModelSerializer[JobEvent]):
    data = serializers.DictField(read_only=True)

    class Meta:
        model = JobEvent
        fields = ["id", "at", "kind", "message", "data"]
        read_only_fields = fields


class RuleInt(serializers.IntegerField):
    """An integer whose range is a rule of job_rules: in the schema, but checked there (so the
    API's message is the form's)."""

    def __init__(self, low: int, high: int, **kwargs: Any) -> None:
        super().__init__(min_value=low, max_value=high, **kwargs)
        self.validators = [
            v for v in self.validators if not isinstance(v, MinValueValidator | MaxValueValidator)
        ]


def _catalog(field: serializers.Field) -> catalog.Catalog:  # type: ignore[type-arg]
    """The request's catalog (queues/models/catalog.py), read once for all its fields and rules."""
    context = field.context
    if "catalog" not in context:
        context["catalog"] = catalog.current()
    found: catalog.Catalog = context["catalog"]
    return found


class CatalogQueueField(serializers.PrimaryKeyRelatedField):  # type: ignore[type-arg]
    """A queue by id among those the caller may see, from the catalog (DRF's messages)."""

    def get_queryset(self) -> Any:
        """The queues the caller may see, for the browsable API's and the schema's choices (a
        submission reads the catalog, not this)."""
        request = self.context.get("request")
        if request is None:
            return super().get_queryset()
        return access.visible_queues(request.user)

    def to_internal_value(self, data: Any) -> Queue:
        try:
            if isinstance(data, bool):
                raise TypeError
            pk = Queue._meta.pk.get_prep_value(data)  # type: ignore[union-attr]
        except (TypeError, ValueError):
            self.fail("incorrect_type", data_type=type(data).__name__)
        queue = _catalog(self).queues.get(pk)
        request = self.context.get("request")
        if queue is None or (request is not None and not queue.is_visible_to(request.user)):
            self.fail("does_not_exist", pk_value=data)
        return queue


class CatalogNameField(serializers.SlugRelatedField):  # type: ignore[type-arg]
    """A service class or flavor by name, from the catalog (DRF's messages)."""

    def __init__(self, table: str, **kwargs: Any) -> None:
        super().__init__(slug_field="name", **kwargs)
        self.table = table  # "service_classes" or "flavors"

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict | list):
            self.fail("invalid")
        found = getattr(_catalog(self), self.table).get(smart_str(data))
        if found is None:
            self.fail("does_not_exist", slug_name=self.slug_field, value=smart_str(data))
        return found


class JobSubmitSerializer(FieldTemplateMixin, serializers.Serializer[Job]):
    """A job submission (POST /jobs/ and /jobs/estimate/). Its queue, class and flavors come
    from the catalog (no query when it is cached), and ``validate`` checks the rules once: the
    ``checked`` it adds tells ``submit_job`` not to check them again."""

    queue = CatalogQueueField(queryset=Queue.objects.all(), help_text="Id of a queue of your team.")
    service_class = CatalogNameField(
        "service_classes", queryset=ServiceClass.objects.all(), help_text="Service class name."
    )
    flavors = CatalogNameField(
        "flavors",
        queryset=Flavor.objects.all(),
        many=True,
        allow_empty=True,  # job_rules says why not
        help_text="Acceptable flavor names, most preferred first; the queue has a quota for each.",
    )
    name = serializers.CharField(help_text="DNS label, e.g. train-llama (at most 63 characters).")
    image = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        help_text="Container image (at most 500 characters); needed unless pod_template has it.",
    )
    command = serializers.ListField(
        child=StrictCharField(allow_blank=True, trim_whitespace=False),
        required=False,
        default=list,
        help_text=(
            f"At most {rules.MAX_COMMAND_ITEMS} words of at most {rules.MAX_COMMAND_ITEM} "
            "characters."
        ),
    )
    workers = RuleInt(1, rules.MAX_WORKERS, default=1)
    min_workers = RuleInt(
        1,
        rules.MAX_WORKERS,
        required=False,
        allow_null=True,
        default=None,
        help_text="Makes the job elastic: it may start with this many workers.",
    )
    gpus_per_worker = RuleInt(1, rules.MAX_GPUS_PER_WORKER, default=1)
    topology_level = serializers.CharField(
        required=False, allow_blank=True, default="", help_text="A node label key, e.g. rack."
    )
    topology_mode = serializers.ChoiceField(
        choices=Job.TopologyMode.choices, required=False, allow_blank=True, default=""
    )
    estimated_runtime = RuleInt(
        1, rules.MAX_INT, required=False, allow_null=True, default=None, help_text="Seconds."
    )
    checkpoint_interval = RuleInt(
        1, rules.MAX_INT, required=False, allow_null=True, default=None, help_text="Seconds."
    )
    duration_hint = RuleInt(
        1,
        rules.MAX_INT,
        required=False,
        allow_null=True,
        default=None,
        help_text="Simulated clusters only: seconds the job runs before it succeeds.",
    )
    # the job's spec: any JSON here, checked by job_rules (queues/models/job_spec.py)
    args = spec_input("args")
    env = spec_input("env")
    volumes = spec_input("volumes")
    shm_size = spec_input("shm_size")
    cpu = spec_input("cpu")
    memory = spec_input("memory")
    cpu_limit = spec_input("cpu_limit")
    memory_limit = spec_input("memory_limit")
    image_pull_secret = spec_input("image_pull_secret")
    working_dir = spec_input("working_dir")
    tolerations = spec_input("tolerations")
    labels = spec_input("labels")
    annotations = spec_input("annotations")
    host_network = spec_input("host_network")
    pod_template = serializers.JSONField(
        required=False,
        help_text="A Kubernetes pod template (a Pod or PodTemplateSpec with metadata and spec, "
        "or a PodSpec) as an object or YAML text: its first container's image, command, args, "
        "env, workingDir, cpu/memory resources and volumeMounts, its volumes, tolerations and "
        "imagePullSecrets become the job's. Anything else is refused with its path.",
    )

    def validate_command(self, command: list[str]) -> list[str]:
        reject_nul(command)
        return command

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        spec = {name: attrs.pop(name) for name in job_spec.SPEC_FIELDS if name in attrs}
        attrs["spec"] = spec or None
        attrs["pod_template"] = attrs.get("pod_template")
        try:
            attrs["checked"] = rules.check_submission(
                self.context["request"].user, rules.Submission(**attrs), known=_catalog(self)
            )
        except rules.InvalidSubmission as error:
            raise serializers.ValidationError(error.message_dict) from None
        return attrs

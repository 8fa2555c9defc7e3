"""Viewsets of ``/api/v1/``. Who sees what is decided by the querysets (gpuplatform/access.py
scopes: other teams' objects simply are not there, hence 404) and who may change what by the
permission classes in gpuplatform/rest.py (403)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.db.models import Prefetch, QuerySet
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from gpuplatform import access
from gpuplatform.rest import (
    JOB_SUBMIT_SCOPE,
    JobPermission,
    JobSubmitThrottle,
    MembershipPermission,
    ReadAnyWritePlatformAdmin,
)
from queues import services
from queues.api import arrays, filtersets, idempotency
from queues.api.audited import (
    AuditedCohortWritesMixin,
    AuditedQueueWritesMixin,
    AuditedWritesMixin,
)
from queues.api.job_serializers import (
    JOB_ROW,
    JobEventSerializer,
    JobRow,
    JobSerializer,
    JobSubmitSerializer,
)
from queues.api.serializers import (
    ClusterSerializer,
    CohortSerializer,
    FlavorSerializer,
    MembershipSerializer,
    NodeSerializer,
    QueueSerializer,
    ServiceClassSerializer,
    TeamSerializer,
)
from queues.api.status_serializers import (
    EstimateSerializer,
    JobLogsSerializer,
    QueueStatusSerializer,
)
from queues.models import (
    Cluster,
    Cohort,
    Flavor,
    IllegalTransition,
    Job,
    JobEvent,
    JobFlavor,
    Membership,
    Node,
    Queue,
    Quota,
    ServiceClass,
    Team,
)
from queues.services.estimate import estimate_submission
from queues.services.queue_status import DEFAULT_PENDING_LIMIT, queue_status
from queues.services.worker_logs import LogsUnavailable, job_logs, parse_log_query


class TeamViewSet(AuditedWritesMixin, viewsets.ModelViewSet[Team]):
    """Teams: members see their own, platform admins and finance all; platform admins write."""

    audit_fields = Team.AUDITED_FIELDS
    serializer_class = TeamSerializer
    permission_classes = [ReadAnyWritePlatformAdmin]
    filterset_fields = ["name"]
    ordering_fields = ["name", "created_at"]

    def get_queryset(self) -> QuerySet[Team]:
        return Team.objects.visible_to(self.request.user).order_by("name")


class MembershipViewSet(AuditedWritesMixin, viewsets.ModelViewSet[Membership]):
    """Who belongs to which team; team admins manage their team's, platform admins all."""

    audit_fields = ("user", "team", "role")
    serializer_class = MembershipSerializer
    permission_classes = [MembershipPermission]
    filterset_class = filtersets.MembershipFilterSet
    ordering_fields = ["id", "role"]

    def get_queryset(self) -> QuerySet[Membership]:
        return (
            access.visible_memberships(self.request.user)
            .select_related("user", "team")
            .order_by("team__name", "user__username")
        )

    def perform_create(self, serializer: BaseSerializer[Membership]) -> None:
        if not access.can_manage_membership(self.request.user, serializer.validated_data["team"]):
            self.permission_denied(self.request, message=MembershipPermission.message)
        super().perform_create(serializer)


class CohortViewSet(AuditedCohortWritesMixin, viewsets.ModelViewSet[Cohort]):
    """Cohorts: queues of one cohort lend each other unused quota; a cohort may sit under a
    parent and hold quota of its own (nested, per flavor)."""

    audit_fields = Cohort.AUDITED_FIELDS
    queryset = (
        Cohort.objects.select_related("parent").prefetch_related("quotas__flavor").order_by("name")
    )
    serializer_class = CohortSerializer
    permission_classes = [ReadAnyWritePlatformAdmin]
    filterset_fields = ["name"]
    ordering_fields = ["name"]


class QueueViewSet(AuditedQueueWritesMixin, viewsets.ModelViewSet[Queue]):
    """Queues with their per-flavor quotas (nested); platform admins write."""

    audit_fields = Queue.AUDITED_FIELDS
    serializer_class = QueueSerializer
    permission_classes = [ReadAnyWritePlatformAdmin]
    filterset_class = filtersets.QueueFilterSet
    ordering_fields = ["name", "weight", "id"]

    def get_queryset(self) -> QuerySet[Queue]:
        return (
            Queue.objects.visible_to(self.request.user)
            .select_related("team", "cohort")
            .prefetch_related(
                "allowed_service_classes",
                Prefetch("quotas", queryset=Quota.objects.select_related("flavor")),
            )
            .order_by("team__name", "name")
        )

    @extend_schema(
        responses={200: QueueStatusSerializer},
        parameters=[
            OpenApiParameter(
                "pending_limit", int, description="Pending jobs listed (0 to 1000, default 100)."
            )
        ],
    )
    @action(detail=True, methods=["get"], filter_backends=[], pagination_class=None)
    def status(self, request: Request, pk: str | None = None) -> Response:
        """Per flavor: nominal, used, borrowed, lent; fair-share score; pending jobs in order
        (listed for the queue's team and platform admins; finance gets the count only)."""
        queue = self.get_object()
        limit = request.query_params.get("pending_limit", str(DEFAULT_PENDING_LIMIT))
        if not limit.isdigit() or int(limit) > 1000:
            raise ValidationError({"pending_limit": "A whole number from 0 to 1000."})
        if not access.job_teams(request.user).filter(pk=queue.team_id).exists():
            limit = "0"  # finance: usage, not job names, owners or reasons
        report = queue_status(queue, pending_limit=int(limit))
        return Response(QueueStatusSerializer(report).data)


class FlavorViewSet(AuditedWritesMixin, viewsets.ModelViewSet[Flavor]):
    """Flavors: whole GPUs of one model or one MIG profile."""

    audit_fields = Flavor.AUDITED_FIELDS
    queryset = Flavor.objects.order_by("name")
    serializer_class = FlavorSerializer
    permission_classes = [ReadAnyWritePlatformAdmin]
    filterset_fields = ["name", "resource", "gpu_model"]
    ordering_fields = ["name", "gpu_equivalent"]


class ServiceClassViewSet(AuditedWritesMixin, viewsets.ModelViewSet[ServiceClass]):
    """Service classes: priority, preemption protection, borrowing, grace period."""

    audit_fields = ServiceClass.AUDITED_FIELDS
    queryset = ServiceClass.objects.order_by("-priority", "name")
    serializer_class = ServiceClassSerializer
    permission_classes = [ReadAnyWritePlatformAdmin]
    filterset_fields = ["name", "preemptible", "can_borrow"]
    ordering_fields = ["name", "priority"]


class ClusterViewSet(AuditedWritesMixin, viewsets.ModelViewSet[Cluster]):
    """Clusters. Token, CA certificate and kubeconfig path are write-only."""

    audit_fields = (
        "name",
        "driver",
        "in_cluster",
        "api_url",
        "token",
        "ca_cert",
        "kubeconfig_path",
        "kubeconfig_context",
        "verify_tls",
    )
    audit_secrets = ("token", "ca_cert")
    queryset = Cluster.objects.order_by("name")
    serializer_class = ClusterSerializer
    permission_classes = [ReadAnyWritePlatformAdmin]
    filterset_fields = ["name", "driver", "status"]
    ordering_fields = ["name", "last_sync_at"]


class NodeViewSet(viewsets.ReadOnlyModelViewSet[Node]):
    """Nodes as last read from their clusters (read-only: clusters report them)."""

    queryset = Node.objects.select_related("cluster").order_by("cluster__name", "name")
    serializer_class = NodeSerializer
    filterset_class = filtersets.NodeFilterSet
    ordering_fields = ["name", "id"]


@extend_schema_view(
    create=extend_schema(
        request=JobSubmitSerializer,
        responses={
            201: JobSerializer,
            422: OpenApiResponse(description="The Idempotency-Key was used for another body."),
        },
        parameters=[
            OpenApiParameter(
                idempotency.HEADER,
                str,
                OpenApiParameter.HEADER,
                description=(
                    "Optional, 1 to 255 printable ASCII characters (e.g. a UUID). A retry with "
                    "the same key and body answers with the job the first request created "
                    "instead of creating another."
                ),
            )
        ],
        description=(
            "Submit a job to a queue of your team (rate limited per user). A job array (Slurm's "
            '--array): the same body with `"array": N` creates N jobs, a list of bodies one '
            "job each; all are validated before any is created, all or none are created, and "
            "the answer is 201 with `array_id`, `count` and `ids`."
        ),
    ),
)
class JobViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet[Job],
):
    """Jobs of your teams (every job for platform admins). Submit, list, cancel."""

    serializer_class = JobSerializer
    permission_classes = [JobPermission]
    filterset_class = filtersets.JobFilterSet
    ordering_fields = ["submitted_at", "id", "state", "name"]
    ordering = ["-submitted_at", "-id"]

    def get_queryset(self) -> QuerySet[Job]:
        jobs = Job.objects.visible_to(self.request.user)
        if self.action == "list":
            return jobs  # read as values by ``list``
        return jobs.select_related(
            "queue__team", "owner", "service_class", "cluster", "runtime"
        ).prefetch_related(
            Prefetch("flavor_links", queryset=JobFlavor.objects.select_related("flavor"))
        )

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """The visible jobs, filtered and ordered as any list (``filter_queryset``), the page
        read as values (``JOB_ROW``: no model instances) and counted on the jobs alone (the
        values' joins would be counted too), each written by ``JobSerializer.rows_json``."""
        jobs = self.filter_queryset(self.get_queryset())
        rows = _Rows(jobs)
        page = self.paginate_queryset(rows)
        serializer = self.get_serializer()
        data = serializer.rows_json(list(rows) if page is None else page)
        return self.get_paginated_response(data) if page is not None else Response(data)

    def get_serializer_class(self) -> type[BaseSerializer[Any]]:
        if self.action in ("create", "estimate"):
            return JobSubmitSerializer
        if self.action == "events":
            return JobEventSerializer
        return JobSerializer

    def get_throttles(self) -> list[Any]:
        if self.action in ("create", "estimate"):
            self.throttle_scope = JOB_SUBMIT_SCOPE
            return [JobSubmitThrottle()]
        return []

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        key = idempotency.request_key(request.headers)
        digest = idempotency.fingerprint(request.data) if key else ""
        if arrays.is_array(request.data):
            return self._create_array(request, key, digest)
        job_id = idempotency.earlier_job(request.user, key, digest) if key else None
        if job_id is None:
            serializer = JobSubmitSerializer(
                data=request.data, context=self.get_serializer_context()
            )
            serializer.is_valid(raise_exception=True)
            if not key:  # the job in hand is the answer: no need to read it again
                job = services.submit_job(owner=request.user, **serializer.validated_data)
                return Response(JobSerializer(job).data, status=status.HTTP_201_CREATED)
            job_id = idempotency.submit_once(
                request.user,
                key,
                digest,
                lambda: services.submit_job(owner=request.user, **serializer.validated_data),
            )
        job = self.get_queryset().get(pk=job_id)
        return Response(JobSerializer(job).data, status=status.HTTP_201_CREATED)

    def _create_array(self, request: Request, key: str, digest: str) -> Response:
        first = idempotency.earlier_job(request.user, key, digest) if key else None
        if first is None:
            submissions = arrays.validated_submissions(request.data, self.get_serializer_context())
            first = idempotency.submit_once(
                request.user,
                key,
                digest,
                lambda: services.submit_array(owner=request.user, submissions=submissions)[0],
            )
        ids = list(
            Job.objects.filter(array_id=first).order_by("array_index").values_list("pk", flat=True)
        )
        body = {"array_id": first, "count": len(ids), "ids": ids}
        return Response(arrays.ArrayCreatedSerializer(body).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        request=JobSubmitSerializer,
        responses={200: EstimateSerializer},
        description=(
            "What would happen to this job if it were submitted now: start, borrow, preempt "
            "(with the jobs it would stop) or wait (with the reason and an estimated start). "
            "Same body as job submission; creates nothing."
        ),
    )
    @action(detail=False, methods=["post"])
    def estimate(self, request: Request) -> Response:
        serializer = JobSubmitSerializer(data=request.data, context=self.get_serializer_context())
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        topology = (
            (data["topology_level"], data["topology_mode"]) if data["topology_level"] else None
        )
        result = estimate_submission(
            user=request.user,
            queue=data["queue"],
            service_class=data["service_class"],
            flavors=data["flavors"],
            workers=data["workers"],
            gpus_per_worker=data["gpus_per_worker"],
            min_workers=data["min_workers"],
            topology=topology,
            estimated_runtime=data["estimated_runtime"],
        )
        return Response(EstimateSerializer(result).data)

    @extend_schema(
        request=None,
        responses={
            200: JobSerializer,
            409: OpenApiResponse(description="The job has already ended."),
        },
    )
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        """Cancel the job: a pending job at once, a running one with its class grace period."""
        job = self.get_object()
        try:
            services.cancel_job(job, request.user)
        except IllegalTransition as error:
            return Response({"detail": str(error)}, status=status.HTTP_409_CONFLICT)
        return Response(JobSerializer(self.get_queryset().get(pk=job.pk)).data)

    @extend_schema(responses={200: JobEventSerializer(many=True)})
    @action(detail=True, methods=["get"], filter_backends=[], pagination_class=None)
    def events(self, request: Request, pk: str | None = None) -> Response:
        """The job's history, oldest first (submitted, admitted, preempted, ...)."""
        job = self.get_object()
        events = JobEvent.objects.filter(job=job).order_by("at", "pk")
        return Response(JobEventSerializer(events, many=True).data)

    @extend_schema(
        responses={
            200: JobLogsSerializer,
            400: OpenApiResponse(description="A bad worker or tail; the parameter is named."),
            503: OpenApiResponse(description="The job's cluster cannot be read now (its error)."),
        },
        parameters=[
            OpenApiParameter(
                "worker", int, description="One worker's index (0-based); default: every worker."
            ),
            OpenApiParameter("tail", int, description="Last lines of each log: 1 to 5000 (100)."),
        ],
    )
    @action(detail=True, methods=["get"], filter_backends=[], pagination_class=None)
    def logs(self, request: Request, pk: str | None = None) -> Response:
        """The job's workers as their pods are now (pod, node, phase, reason, restarts) with
        the last lines of each log, read from its cluster. A job holding no cluster (pending)
        has none: ``workers`` is empty and ``detail`` says why."""
        job = self.get_object()
        if not access.can_read_job_logs(request.user, job):
            raise NotFound()
        query = parse_log_query(request.query_params, job)
        try:
            result = job_logs(job, query.worker, query.tail)
        except LogsUnavailable as error:
            return Response({"detail": str(error)}, status=status.HTTP_503_SERVICE_UNAVAILABLE)
        return Response(JobLogsSerializer(result.as_dict()).data)


class _Rows:
    """Jobs for a paginator: counted as the queryset (no joins), sliced as ``JobRow`` values."""

    def __init__(self, jobs: QuerySet[Job]) -> None:
        self.jobs = jobs
        self.ordered = jobs.ordered

    def count(self) -> int:
        return self.jobs.count()

    def __getitem__(self, index: slice) -> list[JobRow]:
        return [JobRow(*values) for values in self.jobs.values_list(*JOB_ROW)[index]]

    def __iter__(self) -> Iterator[JobRow]:
        return iter(self[:])

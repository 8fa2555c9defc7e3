"""Jobs, their ordered acceptable flavors, their event history, and scheduling-cycle runs."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from gpuplatform import roles
from queues.models import job_rules
from queues.models.organisation import Team
from queues.models.validators import dns_label

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

    from queues.models.resources import Flavor


class IllegalTransition(ValueError):
    """A job state change the state machine does not allow."""


class JobQuerySet(models.QuerySet["Job"]):
    def visible_to(self, user: AbstractBaseUser | AnonymousUser) -> JobQuerySet:
        """Jobs the user may see: platform admins every job, members their teams' jobs, others
        (finance included: it reads usage, not jobs) none."""
        if roles.is_platform_admin(user):
            return self
        if not user.is_authenticated:
            return self.none()
        return self.filter(queue__team__in=Team.objects.of_member(user))


def ranked_flavors(job_ids: list[int]) -> dict[int, list[tuple[int, str]]]:
    """Each job's acceptable flavors as (id, name), most preferred first (one query)."""
    ranked: dict[int, list[tuple[int, str]]] = defaultdict(list)
    if job_ids:
        links = JobFlavor.objects.filter(job_id__in=job_ids)
        rows = links.order_by("job_id", "rank").values_list("job_id", "flavor_id", "flavor__name")
        for job_id, flavor_id, name in rows:
            ranked[job_id].append((flavor_id, name))
    return ranked


class Job(models.Model):
    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        ADMITTED = "admitted", "Admitted"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"
        PREEMPTED = "preempted", "Preempted"

    class TopologyMode(models.TextChoices):
        REQUIRED = "required", "Required"
        PREFERRED = "preferred", "Preferred"

    # The state machine: state -> states it may move to.
    TRANSITIONS: dict[str, frozenset[str]] = {
        "pending": frozenset({"admitted", "cancelled"}),
        "admitted": frozenset({"running", "preempted", "failed", "cancelled"}),
        "running": frozenset({"succeeded", "failed", "cancelled", "preempted"}),
        "preempted": frozenset({"pending"}),
        "succeeded": frozenset(),
        "failed": frozenset(),
        "cancelled": frozenset(),
    }
    TERMINAL_STATES = frozenset({"succeeded", "failed", "cancelled"})

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="jobs"
    )
    queue = models.ForeignKey("queues.Queue", on_delete=models.PROTECT, related_name="jobs")
    service_class = models.ForeignKey(
        "queues.ServiceClass", on_delete=models.PROTECT, related_name="jobs"
    )
    name = models.CharField(max_length=63, validators=[dns_label])
    image = models.CharField(max_length=500, help_text="Container image, e.g. pytorch/pytorch:2.4.")
    command = models.JSONField(
        default=list,
        blank=True,
        help_text='Container command as a list, e.g. ["python", "train.py"].',
    )
    workers = models.PositiveIntegerField(default=1, help_text="Gang size: all start or none.")
    min_workers = models.PositiveIntegerField(
        null=True, blank=True, help_text="Makes the job elastic: it may start with this many."
    )
    gpus_per_worker = models.PositiveIntegerField(default=1)
    flavors = models.ManyToManyField(
        "queues.Flavor",
        through="JobFlavor",
        related_name="jobs",
        help_text="Acceptable flavors in order of preference (the first that fits wins).",
    )
    topology_level = models.CharField(
        max_length=63, blank=True, help_text="Node label key, e.g. rack; empty: anywhere."
    )
    topology_mode = models.CharField(max_length=10, choices=TopologyMode.choices, blank=True)
    estimated_runtime = models.PositiveIntegerField(
        null=True, blank=True, help_text="Seconds; backfill uses it."
    )
    checkpoint_interval = models.PositiveIntegerField(null=True, blank=True, help_text="Seconds.")
    spec = models.JSONField(
        default=dict,
        blank=True,
        help_text="Env, volumes, shm, CPU and memory, tolerations, labels... "
        "(queues/models/job_spec.py).",
    )

    state = models.CharField(
        max_length=20, choices=State.choices, default=State.PENDING, editable=False
    )
    submitted_at = models.DateTimeField(default=timezone.now)
    admitted_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    cluster = models.ForeignKey(
        "queues.Cluster", on_delete=models.SET_NULL, null=True, blank=True, related_name="jobs"
    )
    placement = models.JSONField(
        default=dict, blank=True, help_text="Where the workers run: node name -> worker count."
    )
    current_workers = models.PositiveIntegerField(default=0)
    preemption_count = models.PositiveIntegerField(default=0)
    duration_hint = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Simulated cluster only: seconds the job runs before it succeeds.",
    )
    # A job array (Slurm's --array): the jobs one request created share the id of the first
    # one, each with its index (0, 1, ...); both empty for a job submitted on its own.
    array_id = models.PositiveBigIntegerField(null=True, blank=True, db_index=True, editable=False)
    array_index = models.PositiveIntegerField(null=True, blank=True, editable=False)

    objects = JobQuerySet.as_manager()

    class Meta:
        ordering = ["-submitted_at", "-pk"]
        indexes = [
            models.Index(fields=["state", "queue"], name="job_state_queue_idx"),
            models.Index(fields=["submitted_at"], name="job_submitted_at_idx"),
            models.Index(fields=["owner", "state"], name="job_owner_state_idx"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(workers__gte=1),
                name="job_workers_at_least_one",
                violation_error_message="A job needs at least one worker.",
            ),
            models.CheckConstraint(
                condition=Q(gpus_per_worker__gte=1),
                name="job_gpus_per_worker_at_least_one",
                violation_error_message="Each worker needs at least one GPU (or MIG slice).",
            ),
            models.CheckConstraint(
                condition=Q(min_workers__isnull=True)
                | (Q(min_workers__gte=1) & Q(min_workers__lte=F("workers"))),
                name="job_min_workers_within_workers",
                violation_error_message="min_workers must be between 1 and workers.",
            ),
            models.CheckConstraint(
                condition=(Q(topology_level="") & Q(topology_mode=""))
                | (~Q(topology_level="") & Q(topology_mode__in=["required", "preferred"])),
                name="job_topology_level_and_mode_together",
                violation_error_message=(
                    "Topology needs both a level and a mode (required or preferred), or neither."
                ),
            ),
            models.CheckConstraint(
                condition=Q(
                    state__in=[
                        "pending",
                        "admitted",
                        "running",
                        "succeeded",
                        "failed",
                        "cancelled",
                        "preempted",
                    ]
                ),
                name="job_state_valid",
                violation_error_message="Unknown job state.",
            ),
            models.CheckConstraint(
                condition=Q(current_workers__lte=F("workers")),
                name="job_current_workers_within_workers",
                violation_error_message="A job cannot run more workers than it asked for.",
            ),
            models.CheckConstraint(
                condition=Q(estimated_runtime__isnull=True) | Q(estimated_runtime__gt=0),
                name="job_estimated_runtime_positive",
                violation_error_message="The estimated runtime must be greater than 0 seconds.",
            ),
            models.CheckConstraint(
                condition=Q(checkpoint_interval__isnull=True) | Q(checkpoint_interval__gt=0),
                name="job_checkpoint_interval_positive",
                violation_error_message="The checkpoint interval must be greater than 0 seconds.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} (#{self.pk})" if self.pk else self.name

    @property
    def is_finished(self) -> bool:
        return self.state in self.TERMINAL_STATES

    @property
    def is_elastic(self) -> bool:
        return self.min_workers is not None and self.min_workers < self.workers

    def acceptable_flavors(self) -> list[Flavor]:
        """The acceptable flavors, most preferred first."""
        return [link.flavor for link in self.flavor_links.select_related("flavor").order_by("rank")]

    def acceptable_flavor_names(self) -> list[str]:
        return [flavor.name for flavor in self.acceptable_flavors()]

    def set_acceptable_flavors(self, flavors: Sequence[Flavor], *, new: bool = False) -> None:
        """Replace the acceptable flavors by ``flavors``, in that order of preference. ``new``:
        the job was just created and has none yet (nothing to delete). The links are kept on
        the job as ``flavor_links.all()`` would read them (with their flavors)."""
        job_rules.check_flavor_list(flavors)
        if not new:
            JobFlavor.objects.filter(job=self).delete()
        links = JobFlavor.objects.bulk_create(
            JobFlavor(job=self, flavor=flavor, rank=rank) for rank, flavor in enumerate(flavors)
        )
        self.keep_flavor_links(links)

    def keep_flavor_links(self, links: list[JobFlavor]) -> None:
        """Keep ``links`` (this job's, with their flavors, by rank) as ``flavor_links.all()``
        would read them: no query for them later."""
        cache = self.__dict__.setdefault("_prefetched_objects_cache", {})
        cache.pop("flavor_links", None)
        held = self.flavor_links.all()  # what prefetch_related keeps: a queryset, filled
        held._result_cache, held._prefetch_done = links, True
        cache["flavor_links"] = held

    def clean(self) -> None:
        """The rules about the job's own fields (queues/models/job_rules.py)."""
        job_rules.check_job_fields(self)

    def transition_to(self, new_state: str, *, now: datetime | None = None) -> list[str]:
        """Move the job to ``new_state`` in memory and return the changed field names.

        Refuses moves the state machine does not allow with ``IllegalTransition``. Timestamps
        follow the state: ``admitted_at``, ``started_at``, ``finished_at``. A preempted job
        counts the preemption; back to pending it drops its placement but keeps its original
        ``submitted_at`` (docs/SCHEDULING.md rule 7). The caller saves, e.g.
        ``job.save(update_fields=job.transition_to("running"))``.
        """
        allowed = self.TRANSITIONS.get(self.state, frozenset())
        if new_state not in self.TRANSITIONS:
            raise IllegalTransition(
                f"{new_state!r} is not a job state; states are: {', '.join(self.TRANSITIONS)}."
            )
        if new_state not in allowed:
            options = ", ".join(sorted(allowed)) if allowed else "nothing (it has ended)"
            raise IllegalTransition(
                f"Job {self} cannot go from {self.state} to {new_state}; from {self.state} it can "
                f"go to: {options}."
            )
        moment = now or timezone.now()
        changed = ["state"]
        self.state = new_state
        if new_state == self.State.ADMITTED:
            self.admitted_at = moment
            changed.append("admitted_at")
        elif new_state == self.State.RUNNING:
            self.started_at = moment
            changed.append("started_at")
        elif new_state == self.State.PREEMPTED:
            self.preemption_count += 1
            changed.append("preemption_count")
        elif new_state == self.State.PENDING:  # back from preempted
            self.admitted_at = self.started_at = None
            self.cluster = None
            self.placement = {}
            self.current_workers = 0
            changed += ["admitted_at", "started_at", "cluster", "placement", "current_workers"]
        if new_state in self.TERMINAL_STATES:
            self.finished_at = moment
            self.current_workers = 0
            changed += ["finished_at", "current_workers"]
        return changed


class JobFlavor(models.Model):
    """One acceptable flavor of a job; ``rank`` 0 is the most preferred."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="flavor_links")
    flavor = models.ForeignKey("queues.Flavor", on_delete=models.PROTECT, related_name="job_links")
    rank = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["job", "rank"]
        constraints = [
            models.UniqueConstraint(
                fields=["job", "flavor"],
                name="job_flavor_unique",
                violation_error_message="Each flavor may appear once in a job's list.",
            ),
            models.UniqueConstraint(
                fields=["job", "rank"],
                name="job_flavor_rank_unique",
                violation_error_message="Two flavors of one job cannot share a rank.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.job} #{self.rank}: {self.flavor}"


class JobEvent(models.Model):
    """Something that happened to a job, for its history (submitted, admitted, preempted...).

    ``queues.services.events`` builds each kind's message and data, for the live services and
    the demo's replayed history alike.
    """

    class Kind(models.TextChoices):
        SUBMITTED = "submitted", "Submitted"
        PENDING = "pending", "Pending"  # why it waits, when the reason changes
        ADMITTED = "admitted", "Admitted"
        STARTED = "started", "Started"
        SCALED = "scaled", "Scaled"  # an elastic job grew or shrank
        PREEMPTED = "preempted", "Preempted"  # stopping, its grace period running
        REQUEUED = "requeued", "Requeued"  # back in the queue (after a stop or a worker failure)
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"
        # the platform changed the kubectl-applied object the job was taken in from: took it
        # in, unsuspended it on the planned nodes, suspended it, restored its pod templates
        WORKLOAD = "workload", "Workload"

    # after these a run has ended: its workers stop (the usage ledger closes the run here)
    RUN_ENDS = frozenset(
        {Kind.PREEMPTED, Kind.REQUEUED, Kind.FAILED, Kind.SUCCEEDED, Kind.CANCELLED}
    )
    # the preemptions the dashboards count: an engine stop, or a requeue after one
    PREEMPTIONS = frozenset({Kind.PREEMPTED, Kind.REQUEUED})

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="events")
    at = models.DateTimeField(default=timezone.now)
    kind = models.CharField(max_length=40, choices=Kind.choices)
    message = models.TextField(blank=True)
    data = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["at", "pk"]
        indexes = [models.Index(fields=["job", "at"], name="job_event_job_at_idx")]

    def __str__(self) -> str:
        return f"{self.job} {self.kind} at {self.at:%Y-%m-%d %H:%M:%S}"


class CycleRun(models.Model):
    """One run of the periodic scheduling task (``queues.tasks.run_scheduling_cycle``)."""

    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    worker = models.CharField(max_length=200, blank=True, help_text="Celery worker hostname.")
    outcome = models.TextField(blank=True)

    class Meta:
        ordering = ["-started_at", "-pk"]
        indexes = [models.Index(fields=["started_at"], name="cycle_run_started_at_idx")]

    def __str__(self) -> str:
        return f"cycle at {self.started_at:%Y-%m-%d %H:%M:%S}"

"""State owned by the live scheduling cycle (queues/services/): the single-flight lease, each
job's scheduler-side runtime state, the simulated cluster's workloads, and metric counters.

Only the service layer writes these rows; views and the REST API read them.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone


class SchedulerLease(models.Model):
    """A named lease: whoever holds an unexpired one may run the scheduling cycle.

    Taken with one conditional UPDATE (free, expired, or already ours), so it works the same on
    SQLite and PostgreSQL; a crashed holder's lease simply expires and is taken over.
    """

    name = models.CharField(max_length=63, primary_key=True)
    holder = models.CharField(max_length=200, blank=True)
    expires_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"lease {self.name} held by {self.holder or 'nobody'} until {self.expires_at}"


class JobRuntime(models.Model):
    """The scheduler's side of a job: admitted flavor, stop in progress, why it is pending.

    A job is *stopping* while ``release_at`` lies in the future: its GPUs stay counted until
    then (the class grace period). ``pending_reason`` / ``pending_message`` explain a pending
    job in plain words and change only when the explanation changes; ``pending_position`` and
    ``pending_within_nominal`` are the engine's rank of it in its queue at the last cycle (the
    queue page shows them and ranks nothing itself).
    """

    job = models.OneToOneField(
        "queues.Job", on_delete=models.CASCADE, primary_key=True, related_name="runtime"
    )
    flavor = models.ForeignKey(
        "queues.Flavor",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        help_text="The flavor the job was admitted with.",
    )
    borrowing = models.BooleanField(default=False, help_text="Admitted above nominal quota.")
    start_at = models.DateTimeField(
        null=True, blank=True, help_text="Admitted job: launch time (after victims' grace)."
    )
    stop_reason = models.CharField(max_length=40, blank=True)
    stop_by = models.ForeignKey(
        "queues.Job",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="The preemptor this job's GPUs are held for.",
    )
    release_at = models.DateTimeField(
        null=True, blank=True, help_text="Stopping: when its GPUs come free."
    )
    worker_nodes = models.JSONField(
        default=list, blank=True, help_text="[[worker index, node name], ...] as launched."
    )
    failures = models.PositiveIntegerField(
        default=0, help_text="Gang restarts after a worker failure."
    )
    repair_attempts = models.PositiveIntegerField(
        default=0, help_text="Launch retries for this admission's missing workers."
    )
    requeues = models.PositiveIntegerField(
        default=0,
        help_text="Gang requeues (workers missing, lost or refused); sets the next backoff.",
    )
    requeue_after = models.DateTimeField(
        null=True,
        blank=True,
        help_text=(
            "Backing off after missing or lost workers: not admitted (pending), or not grown "
            "(a shrunk elastic job), before then."
        ),
    )
    pending_reason = models.CharField(max_length=40, blank=True)
    pending_message = models.TextField(blank=True)
    estimated_start = models.DateTimeField(null=True, blank=True)
    pending_position = models.PositiveIntegerField(
        null=True, blank=True, help_text="Pending: its rank in its queue at the last cycle."
    )
    pending_within_nominal = models.BooleanField(
        null=True,
        blank=True,
        help_text="Pending: ranked within its queue's nominal quota at the last cycle.",
    )

    class Meta:
        indexes = [models.Index(fields=["release_at"], name="job_runtime_release_at_idx")]

    def __str__(self) -> str:
        return f"runtime of job {self.job_id}"

    @property
    def stopping(self) -> bool:
        return self.release_at is not None and self.release_at > timezone.now()


class SimulatedWorkload(models.Model):
    """One job's workers on a simulated cluster (queues/clusters/simulated.py)."""

    cluster = models.ForeignKey(
        "queues.Cluster", on_delete=models.CASCADE, related_name="simulated_workloads"
    )
    job_id = models.CharField(max_length=40)
    team = models.CharField(max_length=63)
    workers = models.JSONField(default=list, help_text="[[worker index, node name], ...]")
    launched_at = models.DateTimeField()
    run_seconds = models.FloatField(help_text="Simulated seconds until it ends.")
    fails = models.BooleanField(default=False, help_text="Ends failed instead of succeeded.")
    stop_requested_at = models.DateTimeField(null=True, blank=True)
    gone_at = models.DateTimeField(null=True, blank=True, help_text="Stopping: pods gone then.")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "job_id"], name="simulated_workload_unique_job"
            ),
        ]

    def __str__(self) -> str:
        return f"simulated workload of job {self.job_id} on {self.cluster_id}"


class MetricCounter(models.Model):
    """A monotonic Prometheus counter kept in the database, so every process sees one value."""

    name = models.CharField(max_length=100)
    labels = models.CharField(max_length=300, blank=True, help_text='e.g. queue="team-a/main"')
    value = models.FloatField(default=0.0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["name", "labels"], name="metric_counter_unique"),
            models.CheckConstraint(condition=Q(value__gte=0), name="metric_counter_not_negative"),
        ]

    def __str__(self) -> str:
        return f"{self.name}{{{self.labels}}} {self.value}"


class WorkloadReference(models.Model):
    """The kubectl-applied workload a job was taken in from (docs/KUEUE.md): a batch/v1 Job, a
    JobSet or a PyTorchJob on ``cluster``. ``labels`` are the object's labels as applied (for
    allocation by ``label:<key>``); ``templates`` what the platform changes in each pod template
    when it admits the job, as applied, to put back when it suspends it."""

    job = models.OneToOneField(
        "queues.Job", on_delete=models.CASCADE, primary_key=True, related_name="workload_ref"
    )
    cluster = models.ForeignKey(
        "queues.Cluster", on_delete=models.CASCADE, related_name="workload_refs"
    )
    kind = models.CharField(max_length=63)
    api_version = models.CharField(max_length=253)
    namespace = models.CharField(max_length=63)
    name = models.CharField(max_length=253)
    uid = models.CharField(max_length=63)
    labels = models.JSONField(default=dict, blank=True)
    templates = models.JSONField(default=dict, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster", "uid"], name="workload_reference_unique_uid")
        ]

    def __str__(self) -> str:
        return f"{self.api_version} {self.kind} {self.namespace}/{self.name}"

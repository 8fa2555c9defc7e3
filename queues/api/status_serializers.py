"""Response shapes of ``queues/{id}/status`` and ``jobs/estimate`` (read-only views of the
dataclasses returned by queues/services/queue_status.py and estimate.py)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from queues.services.queue_status import SHARE_MEANING


class FlavorStatusSerializer(serializers.Serializer[Any]):
    flavor = serializers.CharField()
    nominal = serializers.IntegerField()
    borrowing_limit = serializers.IntegerField(allow_null=True)
    lending_limit = serializers.IntegerField(allow_null=True)
    used = serializers.IntegerField()
    borrowed = serializers.IntegerField(help_text="Used above nominal, from the cohort.")
    lent = serializers.IntegerField(
        help_text=(
            "Unused nominal other queues use now: of its cohort, or through the cohort's "
            "parents, of the rest of its cohort tree."
        )
    )
    free_nominal = serializers.IntegerField()


class PendingEntrySerializer(serializers.Serializer[Any]):
    position = serializers.IntegerField(
        allow_null=True,
        help_text=(
            "1-based, the scheduler's rank of the job in its queue at the last cycle; null "
            "until a cycle has ranked it."
        ),
    )
    job_id = serializers.IntegerField()
    name = serializers.CharField()
    owner = serializers.CharField()
    service_class = serializers.CharField()
    priority = serializers.IntegerField()
    workers = serializers.IntegerField()
    gpus_per_worker = serializers.IntegerField()
    flavors = serializers.ListField(child=serializers.CharField())
    submitted_at = serializers.DateTimeField()
    within_nominal = serializers.BooleanField(
        allow_null=True,
        help_text=(
            "The scheduler ranked it among the jobs within their queue's nominal quota at the "
            "last cycle; null until a cycle has ranked it."
        ),
    )
    reason = serializers.CharField(allow_blank=True)
    message = serializers.CharField(allow_blank=True)
    estimated_start = serializers.DateTimeField(allow_null=True)


class QueueStatusSerializer(serializers.Serializer[Any]):
    queue_id = serializers.IntegerField()
    queue = serializers.CharField(help_text="team/queue")
    team = serializers.CharField()
    cohort = serializers.CharField(allow_null=True)
    cohort_parents = serializers.ListField(
        child=serializers.CharField(),
        help_text="The cohort's parent, its parent, ... up to the root (empty: a root cohort).",
    )
    weight = serializers.FloatField()
    is_open = serializers.BooleanField()
    flavors = FlavorStatusSerializer(many=True)
    usage_gpu_equivalent = serializers.FloatField(help_text="U(q): GPU-equivalents in use now.")
    decayed_usage = serializers.FloatField(help_text="H(q): decayed GPU-equivalent-seconds.")
    fair_share_score = serializers.FloatField(help_text="(H/tau + U)/weight; lower runs first.")
    slurm_factor = serializers.FloatField(help_text="Slurm's fair-share factor; 0.5 at share.")
    share = serializers.FloatField(help_text=SHARE_MEANING)
    pending_count = serializers.IntegerField()
    pending = PendingEntrySerializer(
        many=True,
        help_text="Empty for users who do not see the team's jobs (finance): only the count.",
    )


class VictimSerializer(serializers.Serializer[Any]):
    job_id = serializers.IntegerField(
        allow_null=True, help_text="null: a job of another team (not named: no id, name, queue)."
    )
    name = serializers.CharField(allow_blank=True)
    queue = serializers.CharField(allow_blank=True)
    reason = serializers.CharField(allow_blank=True, help_text="reclaim, fair-share or priority")
    shrink_to = serializers.IntegerField(
        allow_null=True, help_text="Elastic victim shrunk to this many workers; null: stopped."
    )


class FlavorQuotaSerializer(serializers.Serializer[Any]):
    flavor = serializers.CharField()
    nominal = serializers.IntegerField()
    borrowing_limit = serializers.IntegerField(allow_null=True)
    lending_limit = serializers.IntegerField(allow_null=True)
    used = serializers.IntegerField()
    need = serializers.IntegerField()
    after = serializers.IntegerField()
    within_nominal = serializers.BooleanField()


class EstimateSerializer(serializers.Serializer[Any]):
    outcome = serializers.ChoiceField(choices=["start", "borrow", "preempt", "wait"])
    summary = serializers.CharField()
    queue = serializers.CharField()
    flavor = serializers.CharField(allow_blank=True)
    cluster = serializers.CharField(allow_blank=True)
    workers = serializers.IntegerField()
    estimated_start = serializers.DateTimeField(allow_null=True)
    reason = serializers.CharField(allow_blank=True)
    message = serializers.CharField(allow_blank=True)
    victims = VictimSerializer(many=True)
    quotas = FlavorQuotaSerializer(many=True)
    currency = serializers.CharField()
    rate_per_hour = serializers.CharField(
        allow_null=True,
        help_text=(
            "Price per hour of this size on the flavor it would run on (else the most "
            "preferred): units x price x class multiplier in force; null without a price."
        ),
    )
    projected_cost = serializers.CharField(
        allow_null=True,
        help_text="The estimated runtime rated as chargeback rates it; null without a runtime.",
    )


class WorkerLogSerializer(serializers.Serializer[Any]):
    index = serializers.IntegerField(help_text="The worker's rank, 0-based.")
    pod = serializers.CharField(
        allow_blank=True, help_text="Its pod's name; empty when it has no pod."
    )
    node = serializers.CharField(
        allow_blank=True, help_text="Where it runs, else the node planned for it."
    )
    phase = serializers.ChoiceField(
        choices=["pending", "running", "succeeded", "failed", "unknown", "missing"],
        help_text="The pod's phase; unknown: its node stopped reporting; missing: no pod.",
    )
    reason = serializers.CharField(
        allow_blank=True, help_text='The pod\'s status reason, e.g. "Evicted".'
    )
    message = serializers.CharField(
        allow_blank=True,
        help_text="What the pod says (a waiting container, a failure), and why there are no "
        "lines when there are none.",
    )
    restarts = serializers.IntegerField(help_text="Container restarts in this pod.")
    lines = serializers.ListField(
        child=serializers.CharField(allow_blank=True, trim_whitespace=False),
        help_text="The last lines of its log, oldest first.",
    )


class JobLogsSerializer(serializers.Serializer[Any]):
    job = serializers.IntegerField()
    cluster = serializers.CharField(
        allow_blank=True, help_text="The cluster the job runs on; empty when none."
    )
    workers = WorkerLogSerializer(many=True)
    detail = serializers.CharField(
        required=False, help_text="Why there are no workers to show (only then)."
    )

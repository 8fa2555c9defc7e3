"""Rolled-up time series behind the dashboards, so long ranges stay fast.

`UsageRollup`: GPU-equivalent-seconds per bucket, team, flavor and cluster, computed from the
accounting ledger (accounting.UsageRecord). `CapacitySample`: GPU-equivalents installed and on
failed (not Ready) nodes per bucket, cluster and flavor, sampled from Node rows each cycle.
Both are written only by `dashboards.rollup` (idempotent: a bucket is recomputed, never added to
twice). Buckets are 5 minutes (`FIVE_MINUTES`) and 1 hour (`ONE_HOUR`), aligned on the UTC epoch.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

FIVE_MINUTES = 300
ONE_HOUR = 3600
BUCKET_SIZES = (FIVE_MINUTES, ONE_HOUR)


class UsageRollup(models.Model):
    bucket_start = models.DateTimeField()
    bucket_seconds = models.PositiveIntegerField(help_text="300 (5 min) or 3600 (1 h).")
    team = models.ForeignKey("queues.Team", on_delete=models.CASCADE, related_name="+")
    flavor = models.ForeignKey("queues.Flavor", on_delete=models.CASCADE, related_name="+")
    cluster = models.ForeignKey("queues.Cluster", on_delete=models.CASCADE, related_name="+")
    gpu_equivalent_seconds = models.FloatField()

    class Meta:
        ordering = ["bucket_seconds", "bucket_start"]
        constraints = [
            models.UniqueConstraint(
                fields=["bucket_seconds", "bucket_start", "team", "flavor", "cluster"],
                name="usage_rollup_unique_bucket",
            ),
            models.CheckConstraint(
                condition=Q(gpu_equivalent_seconds__gte=0), name="usage_rollup_not_negative"
            ),
        ]

    def __str__(self) -> str:
        return (
            f"usage {self.bucket_start:%Y-%m-%d %H:%M}/{self.bucket_seconds}s team {self.team_id}"
        )


class CapacitySample(models.Model):
    """The largest capacity, failed capacity and capacity held by other workloads seen in the
    bucket (max keeps it idempotent)."""

    bucket_start = models.DateTimeField()
    bucket_seconds = models.PositiveIntegerField()
    cluster = models.ForeignKey("queues.Cluster", on_delete=models.CASCADE, related_name="+")
    flavor = models.ForeignKey("queues.Flavor", on_delete=models.CASCADE, related_name="+")
    capacity_gpu_equivalent = models.FloatField(help_text="On every node, failed ones included.")
    failed_gpu_equivalent = models.FloatField(help_text="On nodes that are not Ready.")
    other_gpu_equivalent = models.FloatField(
        default=0.0,
        help_text="On Ready nodes, held by pods the platform did not create (other workloads).",
    )

    class Meta:
        ordering = ["bucket_seconds", "bucket_start"]
        constraints = [
            models.UniqueConstraint(
                fields=["bucket_seconds", "bucket_start", "cluster", "flavor"],
                name="capacity_sample_unique_bucket",
            ),
        ]

    def __str__(self) -> str:
        return f"capacity {self.bucket_start:%Y-%m-%d %H:%M}/{self.bucket_seconds}s"


class RollupMark(models.Model):
    """How far the usage rollup has read the ledger: up to `at`, and ledger rows up to id
    `last_record_id` (rows added later, even ones that began earlier, are rolled up next time)."""

    name = models.CharField(max_length=40, primary_key=True)
    at = models.DateTimeField(null=True, blank=True)
    last_record_id = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.name} rolled up to {self.at}"

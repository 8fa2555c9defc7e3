"""``/api/v1/what-if/``: the proposal's body (THE validation of a what-if request: the quota
editor's page posts the same body) and the run's answer."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from gpuplatform.rest import MAX_INT, bounded_int
from queues.models import Cluster, Cohort, Flavor, Node, Queue, WhatIfRun
from queues.services.snapshot import queue_key
from queues.services.whatif.proposal import CohortQuotaChange, NodeChange, Proposal, QuotaChange

MAX_DAYS = 90


class QuotaChangeSerializer(serializers.Serializer[Any]):
    queue = serializers.PrimaryKeyRelatedField(queryset=Queue.objects.select_related("team"))
    flavor = serializers.SlugRelatedField(slug_field="name", queryset=Flavor.objects.all())
    nominal = bounded_int()
    borrowing_limit = bounded_int(allow_null=True, required=False, default=None)
    lending_limit = bounded_int(allow_null=True, required=False, default=None)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        lending = attrs.get("lending_limit")
        if lending is not None and lending > attrs["nominal"]:
            raise serializers.ValidationError(
                {"lending_limit": "The lending limit cannot exceed the nominal quota."}
            )
        return attrs


class CohortQuotaChangeSerializer(serializers.Serializer[Any]):
    """A cohort's own quota (docs/SCHEDULING.md section 2a): its lending limit may exceed its
    nominal (it lends what its subtree lends it too), as ``/api/v1/cohorts/`` accepts."""

    cohort = serializers.SlugRelatedField(slug_field="name", queryset=Cohort.objects.all())
    flavor = serializers.SlugRelatedField(slug_field="name", queryset=Flavor.objects.all())
    nominal = bounded_int()
    borrowing_limit = bounded_int(allow_null=True, required=False, default=None)
    lending_limit = bounded_int(allow_null=True, required=False, default=None)


class NodeChangeSerializer(serializers.Serializer[Any]):
    cluster = serializers.PrimaryKeyRelatedField(queryset=Cluster.objects.all())
    flavor = serializers.SlugRelatedField(slug_field="name", queryset=Flavor.objects.all())
    add = serializers.IntegerField(
        min_value=-MAX_INT,
        max_value=1000,
        help_text="Nodes to add (copies of a node with this flavor); negative: to remove.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        flavor, add = attrs["flavor"].name, attrs["add"]
        nodes = Node.objects.only("capacity", "cluster_id")
        having = [n for n in nodes if int((n.capacity or {}).get(flavor, 0)) > 0]
        if add > 0 and not having:
            raise serializers.ValidationError({"flavor": f"No node has {flavor} to copy."})
        here = sum(1 for n in having if n.cluster_id == attrs["cluster"].pk)
        if add < 0 and here < -add:
            raise serializers.ValidationError(
                {"add": f"The cluster has {here} nodes with {flavor}; cannot remove {-add}."}
            )
        return attrs


class WhatIfRequestSerializer(serializers.Serializer[Any]):
    days = serializers.IntegerField(min_value=1, max_value=MAX_DAYS, default=14)
    quotas = QuotaChangeSerializer(many=True, required=False, default=list)
    nodes = NodeChangeSerializer(many=True, required=False, default=list)
    cohort_quotas = CohortQuotaChangeSerializer(
        many=True,
        required=False,
        default=list,
        help_text="Cohorts' own quotas to propose (docs/SCHEDULING.md 2a), by cohort name.",
    )

    def validate_quotas(self, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        seen = set()
        for entry in value:
            key = (entry["queue"].pk, entry["flavor"].pk)
            if key in seen:
                raise serializers.ValidationError(
                    f"Queue {entry['queue']} has two quotas for {entry['flavor'].name}."
                )
            seen.add(key)
        return value

    def validate_cohort_quotas(self, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        seen = set()
        for entry in value:
            key = (entry["cohort"].pk, entry["flavor"].pk)
            if key in seen:
                raise serializers.ValidationError(
                    f"Cohort {entry['cohort']} has two quotas for {entry['flavor'].name}."
                )
            seen.add(key)
        return value

    def proposal(self) -> Proposal:
        data = self.validated_data
        return Proposal(
            days=data["days"],
            quotas=tuple(
                QuotaChange(
                    queue=queue_key(q["queue"]),
                    flavor=q["flavor"].name,
                    nominal=q["nominal"],
                    borrowing_limit=q["borrowing_limit"],
                    lending_limit=q["lending_limit"],
                )
                for q in data["quotas"]
            ),
            nodes=tuple(
                NodeChange(cluster=n["cluster"].name, flavor=n["flavor"].name, add=n["add"])
                for n in data["nodes"]
            ),
            cohort_quotas=tuple(
                CohortQuotaChange(
                    cohort=c["cohort"].name,
                    flavor=c["flavor"].name,
                    nominal=c["nominal"],
                    borrowing_limit=c["borrowing_limit"],
                    lending_limit=c["lending_limit"],
                )
                for c in data["cohort_quotas"]
            ),
        )


class WhatIfRunSerializer(serializers.ModelSerializer[WhatIfRun]):
    status_url = serializers.SerializerMethodField()
    result = serializers.JSONField(
        read_only=True,
        allow_null=True,
        help_text=(
            "Once done: days, start, end, jobs, carried_in, proposal, queues and cohorts (each "
            "a row with the run 'today' and the run 'proposed': jobs, never_started, "
            "mean_wait_s, p95_wait_s, gpu_hours, borrowed_gpu_hours, preemptions, "
            "waited_over_a_day), capacity per run, and the allocation charts (Plotly figures)."
        ),
    )

    class Meta:
        model = WhatIfRun
        fields = [
            "id", "state", "progress", "message", "created_at", "expires_at", "proposal",
            "status_url", "result",
        ]  # fmt: skip
        read_only_fields = fields

    def get_status_url(self, run: WhatIfRun) -> str:
        request = self.context.get("request")
        path = f"/api/v1/what-if/{run.pk}/"
        return request.build_absolute_uri(path) if request is not None else path

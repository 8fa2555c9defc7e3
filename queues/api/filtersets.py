"""Query filters of the list endpoints (django-filter)."""

from __future__ import annotations

import django_filters as filters

from queues.models import Job, Membership, Node, Queue


class JobFilterSet(filters.FilterSet):
    state = filters.MultipleChoiceFilter(choices=Job.State.choices)
    queue = filters.NumberFilter(field_name="queue_id", min_value=1, max_value=2**63 - 1)
    team = filters.CharFilter(field_name="queue__team__name", max_length=63)
    owner = filters.CharFilter(field_name="owner__username", max_length=150)
    service_class = filters.CharFilter(field_name="service_class__name", max_length=63)
    submitted_after = filters.IsoDateTimeFilter(field_name="submitted_at", lookup_expr="gte")
    submitted_before = filters.IsoDateTimeFilter(field_name="submitted_at", lookup_expr="lt")

    class Meta:
        model = Job
        fields = [
            "state",
            "queue",
            "team",
            "owner",
            "service_class",
            "submitted_after",
            "submitted_before",
        ]


class QueueFilterSet(filters.FilterSet):
    team = filters.CharFilter(field_name="team__name", max_length=63)
    cohort = filters.CharFilter(field_name="cohort__name", max_length=63)

    class Meta:
        model = Queue
        fields = ["team", "cohort", "is_open"]


class MembershipFilterSet(filters.FilterSet):
    team = filters.CharFilter(field_name="team__name", max_length=63)
    user = filters.CharFilter(field_name="user__username", max_length=150)

    class Meta:
        model = Membership
        fields = ["team", "user", "role"]


class NodeFilterSet(filters.FilterSet):
    cluster = filters.CharFilter(field_name="cluster__name", max_length=63)

    class Meta:
        model = Node
        fields = ["cluster", "ready", "schedulable"]

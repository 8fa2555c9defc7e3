"""Query filters of the list endpoints (django-filter)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import django_filters as filters
from django.core.exceptions import ValidationError
from django_filters.fields import IsoDateTimeField

from queues.models import Job, Membership, Node, Queue


class UtcIsoDateTimeField(IsoDateTimeField):
    """An ISO 8601 date-time, converted to UTC here: one whose UTC instant falls outside the
    years 1 to 9999 is a 400 naming the parameter (the database adapter would overflow)."""

    def to_python(self, value: Any) -> datetime | None:
        moment: datetime | None = super().to_python(value)
        if moment is None:
            return None
        try:
            return moment.astimezone(UTC)
        except OverflowError:
            raise ValidationError(
                "This date-time is outside the years 1 to 9999 in UTC.", code="invalid"
            ) from None


class UtcIsoDateTimeFilter(filters.IsoDateTimeFilter):
    field_class = UtcIsoDateTimeField


class JobFilterSet(filters.FilterSet):
    state = filters.MultipleChoiceFilter(choices=Job.State.choices)
    queue = filters.NumberFilter(field_name="queue_id", min_value=1, max_value=2**63 - 1)
    team = filters.CharFilter(field_name="queue__team__name", max_length=63)
    owner = filters.CharFilter(field_name="owner__username", max_length=150)
    mine = filters.BooleanFilter(
        method="filter_mine", label="true: only the caller's own jobs (the CLI's list)."
    )
    service_class = filters.CharFilter(field_name="service_class__name", max_length=63)
    submitted_after = UtcIsoDateTimeFilter(field_name="submitted_at", lookup_expr="gte")
    submitted_before = UtcIsoDateTimeFilter(field_name="submitted_at", lookup_expr="lt")

    class Meta:
        model = Job
        fields = [
            "state",
            "queue",
            "team",
            "owner",
            "mine",
            "service_class",
            "submitted_after",
            "submitted_before",
        ]

    def filter_mine(self, queryset: Any, name: str, value: bool | None) -> Any:
        return queryset.filter(owner=self.request.user) if value else queryset


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
        fields = ["cluster", "ready", "schedulable", "cordoned", "draining"]

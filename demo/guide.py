"""The "Getting started" panel of the home page: what to try first, per role.

Shown to every signed-in user (it is as useful on a real deployment as in the demo); in the
demo each persona lands on it after logging in.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlencode

from django.urls import reverse

from gpuplatform import access
from queues.models import Membership, Queue


@dataclass(frozen=True)
class Step:
    title: str
    text: str
    links: tuple[tuple[str, str], ...]  # (label, url)


def last_month(now: datetime) -> tuple[str, str]:
    """(first day of last month, first day of this month) as ISO dates."""
    this = now.date().replace(day=1)
    previous = (this - timedelta(days=1)).replace(day=1)
    return previous.isoformat(), this.isoformat()


def getting_started(user: object, now: datetime) -> list[Step]:
    steps: list[Step] = []
    if Membership.objects.filter(user=user).exists():
        steps.append(
            Step(
                "Submit a job and read why it waits",
                "The submission form tells you before you submit whether the job would start, "
                "borrow, preempt or wait. Once it is in, its page says why it is pending, its "
                "position and its estimated start; the queue page shows your fair share.",
                (
                    ("Submit a job", reverse("submit")),
                    ("Your jobs", reverse("jobs")),
                    ("Queues", reverse("queues")),
                ),
            )
        )
    if access.is_platform_admin(user):
        queue = Queue.objects.order_by("pk").first()
        edit = reverse("manage-queue-edit", args=[queue.pk]) if queue else reverse("manage")
        steps.append(
            Step(
                "Lower a quota and watch the reclaim",
                "Lower a queue's nominal quota below what it uses: the page first shows which "
                "running jobs become borrowing and may be reclaimed. Save anyway, then watch "
                "the preemptions on the jobs page and the Quotas and fair share dashboard.",
                (
                    ("Edit a queue's quotas", edit),
                    ("Quotas and fair share", reverse("dashboard", args=["quotas"])),
                    ("Cluster overview", reverse("dashboard", args=["cluster"])),
                ),
            )
        )
    if access.is_platform_admin_or_finance(user):
        start, end = last_month(now)
        query = {"start": start, "end": end}
        csv = {**query, "group_by": "team", "format": "csv"}
        steps.append(
            Step(
                "Export last month's chargeback",
                f"Last month ({start} to {end}) is closed: its statements are final. See the "
                "cost per team, drill down by queue or flavor, and download it as CSV.",
                (
                    ("Chargeback, last month", f"{reverse('chargeback')}?{urlencode(query)}"),
                    ("CSV by team", f"{reverse('chargeback-api')}?{urlencode(csv)}"),
                    ("Charges dashboard", reverse("dashboard", args=["charges"])),
                ),
            )
        )
    return steps

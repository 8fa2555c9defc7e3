"""Lowering a quota below what is in use (issue 24): the waiting job's sentence says the cohort
pool is over-committed, never that it has a negative number of GPUs free."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from queues.models import Job, Quota
from tests.queues.services.helpers import later

pytestmark = pytest.mark.django_db


def test_lowered_quota_says_over_committed_not_negative_free(
    world: SimpleNamespace, submit: Callable[..., Job], cycle: Callable[..., Any],
    reload: Callable[[Job], Job],
) -> None:  # fmt: skip
    Quota.objects.filter(queue=world.queue_a).update(nominal=16)
    submit(gpus=8, workers=2, name="wide", cls="production")  # team-a: 16 (not preemptible)
    cycle(later(1))
    cycle(later(2))
    Quota.objects.filter(queue=world.queue_a).update(nominal=2)  # pool 16 -> 10, 16 in use
    waiting = submit(team="a", gpus=4, name="more", at=later(3))
    cycle(later(4))
    message = reload(waiting).runtime.pending_message
    assert "-6" not in message and "has -" not in message
    assert "the cohort pool of research (10 h100) has none free: it is over-committed by 6" in (
        message
    )

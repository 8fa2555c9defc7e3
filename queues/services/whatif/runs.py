"""A ``WhatIfRun``'s life: asked for (``ask``), replayed by a worker (``execute``, called by the
Celery task ``queues.tasks.run_what_if``) with its progress saved as it goes, read back until it
expires (``WhatIfRun.KEEP``). Only the run's own row is ever written.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from queues.models import WhatIfRun
from queues.services.whatif.compare import compare
from queues.services.whatif.proposal import Proposal, ProposalError

logger = logging.getLogger(__name__)


def ask(user: Any, proposal: Proposal) -> WhatIfRun:
    """Record the request and queue its replay once the transaction commits; expired runs go."""
    WhatIfRun.objects.filter(expires_at__lte=timezone.now()).delete()
    run = WhatIfRun.objects.create(created_by=user, proposal=proposal.to_json())
    transaction.on_commit(lambda: _send(run.pk))
    return run


def _send(run_id: uuid.UUID) -> None:
    from queues.tasks import run_what_if

    try:
        run_what_if.delay(str(run_id))
    except Exception:  # the broker is down: say so on the run instead of leaving it queued
        logger.exception("could not queue what-if run %s", run_id)
        WhatIfRun.objects.filter(pk=run_id).update(
            state=WhatIfRun.State.FAILED, message="The task queue could not be reached."
        )


def visible(user: Any) -> Any:
    """The unexpired runs a user may read: their own."""
    return WhatIfRun.objects.filter(created_by=user, expires_at__gt=timezone.now())


def execute(run_id: str, now: datetime | None = None) -> None:
    """Replay a run, the window ending ``now`` (default: the present). Idempotent: a run
    already done or failed is left as it is."""
    run = WhatIfRun.objects.filter(pk=run_id).first()
    if run is None or run.state in (WhatIfRun.State.DONE, WhatIfRun.State.FAILED):
        return
    _update(run_id, state=WhatIfRun.State.RUNNING, message="Replaying")

    def progress(done: float) -> None:
        _update(run_id, progress=round(done, 3))

    try:
        result = compare(Proposal.from_json(run.proposal), now or timezone.now(), progress)
    except ProposalError as exc:
        _update(run_id, state=WhatIfRun.State.FAILED, message=str(exc)[:300])
        return
    except Exception:
        logger.exception("what-if run %s failed", run_id)
        _update(run_id, state=WhatIfRun.State.FAILED, message="The replay failed; see the logs.")
        return
    _update(run_id, state=WhatIfRun.State.DONE, progress=1.0, message="", result=result)


def _update(run_id: str, **fields: Any) -> None:
    WhatIfRun.objects.filter(pk=run_id).update(**fields)

"""``Idempotency-Key`` on job submission (``POST /api/v1/jobs/``).

A submission sent with the header creates its job once: a retry by the same user with the same
key and the same body answers like the first request did (201 and the job it created), whatever
happened to the first answer. The same key with a different body is refused (422), as the IETF
draft "The Idempotency-Key HTTP Header Field" asks; two requests racing with one key create one
job (the unique constraint decides, the loser's job is rolled back). Without the header,
nothing changes. Keys are kept with the job (``SubmissionKey``), per user.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from django.db import IntegrityError, transaction
from rest_framework import status
from rest_framework.exceptions import APIException, ValidationError

from queues.models import Job, SubmissionKey

HEADER = "Idempotency-Key"
MAX_LENGTH = 255


class KeyReused(APIException):
    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    default_detail = (
        f"This {HEADER} was already used for a different submission; use a new key for a new job."
    )
    default_code = "idempotency_key_reused"


def request_key(headers: Any) -> str:
    """The request's key, "" without one; a key that is empty, too long or not printable ASCII
    is refused (400)."""
    raw = headers.get(HEADER)
    if raw is None:
        return ""
    key = str(raw).strip()
    if not key or len(key) > MAX_LENGTH or not all(" " <= c <= "~" for c in key):
        raise ValidationError(
            {HEADER: [f"A key of 1 to {MAX_LENGTH} printable ASCII characters, e.g. a UUID."]}
        )
    return key


def fingerprint(data: Any) -> str:
    """SHA-256 of the submitted body, independent of key order."""
    if hasattr(data, "lists"):  # a QueryDict (form or multipart body)
        data = {name: values for name, values in data.lists()}
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def earlier_job(owner: Any, key: str, digest: str) -> int | None:
    """The job a submission with this key already created, if any (422 for another body)."""
    row = SubmissionKey.objects.filter(owner=owner, key=key).first()
    if row is None:
        return None
    if row.request_hash != digest:
        raise KeyReused()
    return row.job_id


class _Taken(Exception):
    """Another request with the same key created its job first."""


def submit_once(owner: Any, key: str, digest: str, submit: Callable[[], Job]) -> int:
    """Run ``submit`` and remember its job under ``key``; the job's id. When a concurrent
    request with the same key won, our job is rolled back and theirs answered."""
    if not key:
        return submit().pk
    try:
        with transaction.atomic():
            job = submit()
            try:
                with transaction.atomic():
                    SubmissionKey.objects.create(owner=owner, key=key, request_hash=digest, job=job)
            except IntegrityError:
                raise _Taken() from None
    except _Taken:
        winner = earlier_job(owner, key, digest)
        assert winner is not None  # the constraint said it exists
        return winner
    return job.pk

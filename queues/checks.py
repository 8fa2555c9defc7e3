"""System checks of the scheduling app (``manage.py check --deploy``)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Tags, Warning, register


@register(Tags.security, deploy=True)
def cluster_token_keys(app_configs: Any, **kwargs: Any) -> list[Warning]:
    if getattr(settings, "CLUSTER_TOKEN_KEYS", None):
        return []
    return [
        Warning(
            "CLUSTER_TOKEN_KEYS is not set: cluster tokens are encrypted with a key derived from "
            "SECRET_KEY, so changing SECRET_KEY would make them unreadable.",
            hint="Set CLUSTER_TOKEN_KEYS to a long random secret (README: Install in a cluster).",
            id="queues.W001",
        )
    ]

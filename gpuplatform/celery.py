"""The Celery application: configured from Django settings (the ``CELERY_`` names), JSON only,
tasks discovered in each app's ``tasks.py``, beat schedule from ``CELERY_BEAT_SCHEDULE``.

Run with ``celery -A gpuplatform worker`` and ``celery -A gpuplatform beat``. Their log lines
go through Django's ``LOGGING`` (text or ``LOG_FORMAT=json``, with cycle and job ids:
gpuplatform/logs.py) instead of Celery's own set-up.
"""

from __future__ import annotations

import os
from typing import Any

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuplatform.settings")

app = Celery("gpuplatform")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.setup_logging.connect
def use_django_logging(**kwargs: Any) -> None:
    """Answering this signal stops Celery from replacing the root logger's handlers."""
    import logging.config

    from django.conf import settings

    logging.config.dictConfig(settings.LOGGING)

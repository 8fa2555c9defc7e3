"""The Celery application: configured from Django settings (the ``CELERY_`` names), JSON only,
tasks discovered in each app's ``tasks.py``, beat schedule from ``CELERY_BEAT_SCHEDULE``.

Run with ``celery -A gpuplatform worker`` and ``celery -A gpuplatform beat``.
"""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuplatform.settings")

app = Celery("gpuplatform")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

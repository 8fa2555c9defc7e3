"""gpuplatform: project wiring (settings, Celery app, URLs, site shell)."""

from gpuplatform.celery import app as celery_app

__all__ = ["celery_app"]

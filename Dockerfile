# gpuplatform production image: one image for web (gunicorn), Celery worker and Celery beat, and
# the migration one-shot (docker-compose's "migrate", Kubernetes' migration Job). It runs as the
# numeric user 10001 (Kubernetes' runAsNonRoot can check it) and writes only to /app/var and
# /tmp, so the root filesystem may be read-only.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VAR_DIR=/app/var

WORKDIR /app

# Dependencies first (cached while only the code changes).
COPY pyproject.toml README.md ./
COPY gpuplatform/__init__.py gpuplatform/
COPY queues/__init__.py queues/
COPY accounting/__init__.py accounting/
RUN pip install . && pip uninstall --yes gpuplatform

COPY . .
RUN DEBUG=false SECRET_KEY=collectstatic-only python manage.py collectstatic --no-input \
    && useradd --system --uid 10001 --user-group --no-create-home --home-dir /app app \
    && mkdir -p /app/var \
    && chown -R app:app /app/var

USER 10001:10001
EXPOSE 8000
# The web process's readiness (gpuplatform/health.py); docker-compose.yml gives the worker and
# beat their own checks.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/readyz', timeout=4)"]
CMD ["gunicorn", "gpuplatform.wsgi", "--bind", "0.0.0.0:8000", "--workers", "3", "--access-logfile", "-"]

# gpuplatform production image: one image for web (gunicorn), Celery worker and Celery beat.
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
    && useradd --system --no-create-home --home-dir /app app \
    && mkdir -p /app/var \
    && chown app /app/var

USER app
EXPOSE 8000
CMD ["gunicorn", "gpuplatform.wsgi", "--bind", "0.0.0.0:8000", "--workers", "3", "--access-logfile", "-"]

"""The one settings module. Everything that differs between a laptop and production comes from
environment variables (README: "Configuration"), read through the typed helpers in env.py.

Defaults are the embedded set-up of ``make demo``: SQLite under ``var/``, a Celery broker that
needs no server (kombu's ``filesystem://`` transport, folders under ``var/``) and DEBUG on.
Production (docker-compose.yml) sets DEBUG off, a SECRET_KEY, PostgreSQL and Redis.
"""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured

from gpuplatform.env import (
    env_bool,
    env_cache_url,
    env_database,
    env_float,
    env_int,
    env_list,
    env_proxy_ssl_header,
    env_str,
)
from gpuplatform.logs import FORMATS, logging_config

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DEBUG", True)

SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set and DEBUG is off. Set SECRET_KEY to a long random string "
            '(for example the output of: python -c "import secrets; '
            'print(secrets.token_urlsafe(50))"), or set DEBUG=true for local development.'
        )
    SECRET_KEY = "django-insecure-development-only-key-never-use-in-production"

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool("SECURE_COOKIES", False)

# --- HTTPS and browser protections (README "Configuration": the production values make
# `manage.py check --deploy` clean; the defaults suit `make demo` over plain HTTP) -------------
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
"""Redirect plain-HTTP requests to HTTPS (behind a proxy: with SECURE_PROXY_SSL_HEADER)."""
SECURE_REDIRECT_EXEMPT = [r"^metrics$", r"^healthz$", r"^readyz$"]  # probes and Prometheus
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0, minimum=0)
"""Strict-Transport-Security max-age over HTTPS (0: no header); production: 31536000."""
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SECURE_PROXY_SSL_HEADER = env_proxy_ssl_header("SECURE_PROXY_SSL_HEADER")
"""The header a TLS-terminating proxy of one's own sets, e.g. X-Forwarded-Proto."""
CONTENT_SECURITY_POLICY = env_str(
    "CONTENT_SECURITY_POLICY",
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; object-src 'none'; "
    "base-uri 'self'; form-action 'self'; frame-ancestors 'none'",
)
"""The Content-Security-Policy header of every response (gpuplatform/middleware.py; empty: none).
Scripts only from the site's own files (no inline script anywhere: data travels in json_script
blocks); inline styles allowed, which Plotly's charts and Swagger UI set."""

INSTALLED_APPS = [
    "gpuplatform.apps.PlatformAdminConfig",  # django.contrib.admin with the platform's site
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "queues",
    "accounting",
    "audit",
    "tokens",
    "dashboards",
    "demo",
]

MIDDLEWARE = [
    # /healthz, /readyz and /metrics before the Host check and the HTTPS redirect (health.py)
    "gpuplatform.health.HealthProbeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "gpuplatform.middleware.RejectNulQueryMiddleware",
    "gpuplatform.middleware.ContentSecurityPolicyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "gpuplatform.urls"
WSGI_APPLICATION = "gpuplatform.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "gpuplatform.context_processors.nav_items",
                "accounting.context_processors.budget_alerts",
            ],
        },
    },
]

# --- Database ---------------------------------------------------------------------------------
DATABASES = {
    "default": env_database(
        "DATABASE_URL", f"sqlite:///{VAR_DIR / 'gpuplatform.sqlite3'}", base_dir=BASE_DIR
    )
}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # The test database is a file, not memory, so that a real Celery worker process started by
    # the end-to-end tests can open it too.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test-gpuplatform.sqlite3")}
    # Several processes (web, worker processes) write to one SQLite file: transactions take the
    # write lock when they begin (waiting up to 20 s for it) instead of failing with "database is
    # locked" when a read turns into a write; WAL lets readers go on while one process writes.
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL;",
    }
    if DATABASES["default"]["NAME"] != ":memory:":
        Path(DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
else:
    # PostgreSQL: a server process keeps its connection between requests (and tasks) instead of
    # opening one per request; a connection found broken is replaced before it is used.
    DATABASES["default"]["CONN_MAX_AGE"] = env_int("DATABASE_CONN_MAX_AGE", 60, minimum=0)
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# --- Time, language ---------------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- Static files (Whitenoise serves them; no CDN, no build step) -----------------------------
STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}

# --- REST API (/api/v1/: queues/api/, accounting/api/, tokens/; shared bits in gpuplatform/rest.py)
REST_FRAMEWORK = {
    # The token class comes first: its WWW-Authenticate header makes anonymous requests a 401.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "tokens.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": [
        "gpuplatform.parsers.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "rest_framework.filters.OrderingFilter",
    ],
    "DEFAULT_PAGINATION_CLASS": "gpuplatform.rest.Pagination",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "gpuplatform.rest.exception_handler",
    "DATETIME_FORMAT": "iso-8601",
    "COERCE_DECIMAL_TO_STRING": True,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "gpuplatform API",
    "DESCRIPTION": "GPU quota and fair share: teams, queues, quotas, jobs, clusters, chargeback.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
}
JOB_SUBMIT_RATE = env_str("JOB_SUBMIT_RATE", "60/minute")
"""Job submissions per user through the API, as N/second, N/minute, N/hour or N/day."""
if not re.fullmatch(r"[1-9][0-9]*/(s|sec|second|m|min|minute|h|hour|d|day)", JOB_SUBMIT_RATE):
    raise ImproperlyConfigured(
        f"JOB_SUBMIT_RATE={JOB_SUBMIT_RATE!r} is not a rate: use a count per period such as "
        "60/minute, 5/second, 1000/hour or 10000/day."
    )
API_TOKEN_TOUCH_SECONDS = 60
"""An API token's last_used_at is written at most this often."""
# The most jobs one array request may create (Slurm's MaxArraySize).
JOB_ARRAY_MAX_SIZE = env_int("JOB_ARRAY_MAX_SIZE", 10000, minimum=1)
API_TOKEN_LIFETIME_DAYS = env_int("API_TOKEN_LIFETIME_DAYS", 90, minimum=1)
"""Days a new API token lives when its owner gives no expiry (tokens/lifetime.py)."""
API_TOKEN_MAX_LIFETIME_DAYS = env_int(
    "API_TOKEN_MAX_LIFETIME_DAYS", max(365, API_TOKEN_LIFETIME_DAYS), minimum=1
)
"""The longest expiry a user may choose; platform admins may choose any, or none (never)."""
if API_TOKEN_MAX_LIFETIME_DAYS < API_TOKEN_LIFETIME_DAYS:
    raise ImproperlyConfigured(
        f"API_TOKEN_MAX_LIFETIME_DAYS={API_TOKEN_MAX_LIFETIME_DAYS} is shorter than "
        f"API_TOKEN_LIFETIME_DAYS={API_TOKEN_LIFETIME_DAYS}: the default would be refused."
    )
LOGIN_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 10, minimum=1)
"""Failed sign-ins per username, and failed sign-ins or bad bearer tokens per client address,
within LOGIN_FAILURE_WINDOW before it is locked out (gpuplatform/lockout.py)."""
LOGIN_FAILURE_WINDOW = env_int("LOGIN_FAILURE_WINDOW", 900, minimum=1)
"""Seconds failures are counted for, from the first; a lockout ends with the window."""
NUM_PROXIES = env_int("NUM_PROXIES", 0, minimum=0)
"""Reverse proxies of one's own in front of the site: the client's address is the NUM_PROXIES-th
from the right of X-Forwarded-For (0: REMOTE_ADDR, the header ignored)."""
REST_FRAMEWORK["NUM_PROXIES"] = NUM_PROXIES
# The throttle and login-failure counts live in the default cache: a Redis all processes share
# when CACHE_URL names one or REDIS_URL does (then its next database: env_cache_url), else
# Django's in-process memory cache (per process: each gunicorn worker would count on its own).
CACHE_URL = env_cache_url()
if CACHE_URL:
    CACHES = {"default": {"BACKEND": "gpuplatform.cache.RedisCache", "LOCATION": CACHE_URL}}
CATALOG_CACHE_SECONDS = env_int("CATALOG_CACHE_SECONDS", 300 if CACHE_URL else 0, minimum=0)
"""How long the submission catalog (queues, classes, flavors, quotas, capacity per flavor) is kept
in the shared cache; each change moves its version on (queues/models/catalog.py). 0 turns it
off; it is off by default without a shared cache (a per-process cache cannot tell one process
of another's change)."""

# --- Celery -----------------------------------------------------------------------------------
# REDIS_URL is the broker. Unset, Celery uses kombu's filesystem transport: messages are files in
# var/celery/messages (producer and consumer share that folder: kombu's "data_folder_out" of the
# sender must be the "data_folder_in" of the worker), consumed ones move to var/celery/processed,
# exchange bindings live in var/celery/control.
CELERY_BROKER_URL = env_str("REDIS_URL") or "filesystem://localhost/"
CELERY_FILESYSTEM_DIR = VAR_DIR / "celery"
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {}
if CELERY_BROKER_URL.startswith("filesystem://"):
    CELERY_BROKER_TRANSPORT = "gpuplatform.broker:Transport"  # writes each message atomically
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(CELERY_FILESYSTEM_DIR / "messages"),
        "data_folder_out": str(CELERY_FILESYSTEM_DIR / "messages"),
        "processed_folder": str(CELERY_FILESYSTEM_DIR / "processed"),
        "store_processed": True,
        # exchange -> queue bindings (kombu's default is ./control, in the working directory)
        "control_folder": str(CELERY_FILESYSTEM_DIR / "control"),
    }
    for _folder in ("messages", "processed", "control"):
        (CELERY_FILESYSTEM_DIR / _folder).mkdir(parents=True, exist_ok=True)
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_QUEUE", "celery")
"""The queue tasks go to and workers read: give deployments that share one Redis their own."""
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
CELERY_TIMEZONE = TIME_ZONE
CELERY_ENABLE_UTC = True
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")

CYCLE_INTERVAL = env_int("CYCLE_INTERVAL", 10, minimum=1)
"""Seconds between two periodic scheduling cycles (Celery beat)."""

SCHEDULER_LEASE_SECONDS = env_int("SCHEDULER_LEASE_SECONDS", 120, minimum=5)
"""How long one cycle may hold the single-flight lease before another worker may take it over."""

DEFAULT_JOB_RUNTIME = env_int("DEFAULT_JOB_RUNTIME", 3600, minimum=1)
"""Seconds backfill assumes for a job with no estimate whose class has no maximum runtime."""

FAIRSHARE_HALF_LIFE = env_int("FAIRSHARE_HALF_LIFE", 7 * 24 * 3600, minimum=60)
"""Seconds after which a queue's fair-share usage history counts half (docs/SCHEDULING.md 5)."""

PREEMPTION_PROTECTION_SECONDS = env_int("PREEMPTION_PROTECTION_SECONDS", 0, minimum=0)
"""Seconds after each (re)start during which a job is not stopped by fair-share or priority
preemption (a reclaim may still stop it), for a service class whose own
``preemption_protection`` is empty (docs/SCHEDULING.md section 4, rule 1)."""

CLUSTER_TOKEN_KEYS = env_list("CLUSTER_TOKEN_KEYS", [])
"""Secrets (comma-separated, each at least 32 characters) that encrypt the stored cluster tokens:
the first encrypts, all decrypt (rotation: queues/models/encrypted.py). Empty: derived from
SECRET_KEY (`check --deploy` warns)."""
for _key in CLUSTER_TOKEN_KEYS:
    if len(_key) < 32:
        raise ImproperlyConfigured(
            f"CLUSTER_TOKEN_KEYS holds a key of {len(_key)} characters: each needs at least 32 "
            '(for example the output of: python -c "import secrets; '
            'print(secrets.token_urlsafe(32))").'
        )

METRICS_TOKEN = env_str("METRICS_TOKEN")
"""When set, /metrics requires the header ``Authorization: Bearer <METRICS_TOKEN>``."""

GANG_REPAIR_CYCLES = env_int("GANG_REPAIR_CYCLES", 3, minimum=0)
"""Cycles a launch that left a gang short of workers is retried before the gang is stopped
whole and requeued (queues/services/gang.py)."""

GANG_REQUEUE_BACKOFF = env_int("GANG_REQUEUE_BACKOFF", 60, minimum=0)
"""Seconds a gang requeued for missing, lost or refused workers waits before it may be admitted
again; doubled at each further requeue of the same job, up to GANG_REQUEUE_BACKOFF_MAX."""

GANG_REQUEUE_BACKOFF_MAX = env_int("GANG_REQUEUE_BACKOFF_MAX", 3600, minimum=0)
"""The longest requeue backoff, in seconds."""

SIMULATION_SPEED = env_float("SIMULATION_SPEED", 60.0, minimum=0.001)
"""Simulated clusters run jobs this many times faster than real time (60: an hour in a minute)."""

SIMULATION_FAILURE_RATE = env_float("SIMULATION_FAILURE_RATE", 0.02, minimum=0.0, maximum=1.0)
"""Fraction of simulated job runs that fail (deterministic per job id and attempt)."""

# --- Accounting ---------------------------------------------------------------------------------
ACCOUNTING_CURRENCY = env_str("ACCOUNTING_CURRENCY", "USD").upper()
"""The one currency of prices, charges, statements and budgets (ISO 4217, 2 minor units)."""

ACCOUNTING_SHARE_IDLE = env_bool("ACCOUNTING_SHARE_IDLE", False)
"""Add idle-share lines to statements (OpenCost's shareIdle); close_month --share-idle too."""

CELERY_BEAT_SCHEDULE = {
    "scheduling-cycle": {
        "task": "queues.tasks.run_scheduling_cycle",
        "schedule": timedelta(seconds=CYCLE_INTERVAL),
        # A tick that waited longer than one interval is useless: the next one is on its way.
        "options": {"expires": CYCLE_INTERVAL},
    },
    "close-last-month": {
        "task": "accounting.tasks.close_last_month",
        "schedule": crontab(minute=30, hour=0, day_of_month="1"),
    },
}

# --- Demo -------------------------------------------------------------------------------------
DEMO_TRAFFIC = env_bool("DEMO_TRAFFIC", False)
"""Submit demo work on behalf of the demo researchers (Celery beat entry ``demo-traffic``);
``make demo`` turns it on. Never in production."""

DEMO_TRAFFIC_INTERVAL = env_int("DEMO_TRAFFIC_INTERVAL", 15, minimum=1)
"""Seconds between two ticks of demo traffic."""

if DEMO_TRAFFIC:
    CELERY_BEAT_SCHEDULE["demo-traffic"] = {
        "task": "demo.tasks.submit_demo_traffic",
        "schedule": timedelta(seconds=DEMO_TRAFFIC_INTERVAL),
        "options": {"expires": DEMO_TRAFFIC_INTERVAL},
    }

# --- Logging: INFO to the console, so `make demo` shows the cycle ticks -----------------------
LOG_FORMAT = env_str("LOG_FORMAT", "text").lower()
"""``text`` (``time LEVEL logger: [cycle <id> job <id>] message``) or ``json``: one object per
line with ``cycle_id`` and ``job_id`` (gpuplatform/logs.py); Celery worker and beat use it too."""
if LOG_FORMAT not in FORMATS:
    raise ImproperlyConfigured(f"LOG_FORMAT={LOG_FORMAT!r} is not a log format: use text or json.")
LOGGING = logging_config(LOG_FORMAT, env_str("LOG_LEVEL", "INFO").upper())

"""Settings: one module, driven by environment variables (each documented in .env.example).

With nothing set, the embedded setup: a SQLite file and Celery tasks run in process.
Production differs only by environment values: DATABASE_URL (PostgreSQL), CELERY_BROKER_URL (Redis),
SECRET_KEY, ALLOWED_HOSTS and the HTTPS switches.
"""

from __future__ import annotations

import json
import os
from datetime import timedelta
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool = False) -> bool:
    return os.environ.get(name, str(default)).strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = env_bool("DEBUG", False)
SECRET_KEY = os.environ.get(
    # The embedded default is marked insecure so that `check --deploy` flags a production without one.
    "SECRET_KEY",
    "django-insecure-embedded-only-key-set-SECRET_KEY-in-production-0123456789abcdef",
)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "labeling.apps.AdminConfig",  # django.contrib.admin, its modules registered on first use
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "axes",
    "labeling.apps.LabelingConfig",
    "pooling",
    "judgements",
    "evaluation",
    "online",
    "demo",  # last: the demo loader may use every app
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "labeling.middleware.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # After the session and the user (a page's refusal is a page, with its header), before every view.
    "labeling.middleware.RejectNulMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "judgements.campaign_views.JudgingNotSetUpMiddleware",
    "pooling.views.QueueUnavailableMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into its 429 answer.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "labeling.urls"
WSGI_APPLICATION = "labeling.wsgi.application"

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
                "labeling.context_processors.roles",
            ],
        },
    },
]

# Database: SQLite file by default; DATABASE_URL=postgres://... for production.
DATA_DIR = Path(os.environ.get("DATA_DIR", BASE_DIR / "var"))
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{DATA_DIR / 'db.sqlite3'}"),
        conn_max_age=int(os.environ.get("DB_CONN_MAX_AGE", "60")),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets readers work while a rater's judgement commits; IMMEDIATE takes the write lock up front, so
    # two writers queue instead of failing with "database is locked" on a lock upgrade.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    DATA_DIR.mkdir(parents=True, exist_ok=True)
elif DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Django turns psycopg's prepared statements off (for transaction-mode connection poolers). Its own
    # cursors bind parameters on the client and are never prepared either way; this lets the rater's hot
    # statements (`judgements.prepared.one_row`, which asks for it) be planned once per connection
    # instead of on every request (about 2 ms less PostgreSQL CPU per lease), and planned generic at once
    # (PostgreSQL would first plan them five times for their parameters; no other statement of the app is
    # prepared, so nothing else is affected). A transaction-mode pooler (PgBouncer before 1.21) would need
    # prepare_threshold back to None.
    DATABASES["default"]["OPTIONS"] = {
        **DATABASES["default"].get("OPTIONS", {}),
        "prepare_threshold": 5,
        "options": "-c plan_cache_mode=force_generic_plan",
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# Logins (the login page, the admin's, the API token endpoint) are counted by django-axes: after
# LOGIN_FAILURE_LIMIT wrong passwords for one username from one address, that pair is refused — the right
# password too — for LOGIN_COOLOFF_MINUTES (answer 429). Counting the pair, not the address alone, keeps one
# rater's typos from locking out a whole office behind one address, and an attacker from locking out a
# user by name; the API's per-address throttle (below) bounds guessing across many usernames.
AUTHENTICATION_BACKENDS = [
    "labeling.auth.LoginLimitBackend",
    # Django's ModelBackend, the user of a session read by one prepared statement on PostgreSQL
    "labeling.auth.ModelBackend",
]
AXES_FAILURE_LIMIT = int(os.environ.get("LOGIN_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = timedelta(minutes=int(os.environ.get("LOGIN_COOLOFF_MINUTES", "15")))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
# The client's address: REMOTE_ADDR, or behind a proxy the one it appends to X-Forwarded-For (a header
# the client could otherwise set to anything, changing its address at every guess).
AXES_IPWARE_META_PRECEDENCE_ORDER = (
    ("HTTP_X_FORWARDED_FOR", "REMOTE_ADDR") if env_bool("BEHIND_PROXY") else ("REMOTE_ADDR",)
)
AXES_IPWARE_PROXY_COUNT = 1 if env_bool("BEHIND_PROXY") else None
# Password reset (/accounts/password_reset/): mails a one-use link. Off with PASSWORD_RESET_ENABLED=false
# (every reset page then answers 404). PASSWORD_RESET_RATE requests per address and per email address;
# the mail is sent by a task (the worker in production), and an unknown address costs the same work.
PASSWORD_RESET_ENABLED = env_bool("PASSWORD_RESET_ENABLED", True)
PASSWORD_RESET_RATE = os.environ.get("PASSWORD_RESET_RATE", "5/hour")
# Mail: the embedded default prints messages on the console; production sets EMAIL_BACKEND to SMTP.
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = int(os.environ.get("EMAIL_PORT", "25"))
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
EMAIL_TIMEOUT = int(os.environ.get("EMAIL_TIMEOUT", "10"))
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "labels@localhost")
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", BASE_DIR / "staticfiles"))
STATICFILES_DIRS = [BASE_DIR / "static"]
# WhiteNoise serves static files from the app itself (gunicorn needs no separate static server);
# without collectstatic (demo, tests) it finds them in place.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
MEDIA_ROOT = Path(os.environ.get("MEDIA_ROOT", DATA_DIR / "media"))
MEDIA_URL = "/media/"
# Uploaded files above this size are streamed to a temporary file, never held in memory.
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
# API imports of files up to this size are checked before the answer (a bad file: 400 with its errors by
# line); larger ones are checked by their job (202, then the job fails with the errors). 0: always the job.
IMPORT_CHECK_MAX_BYTES = int(os.environ.get("IMPORT_CHECK_MAX_BYTES", str(20 * 1024 * 1024)))
# The check reads at most this many bytes of the file's data once decompressed (a small gzip file can
# expand a thousandfold); a file that expands further is left to its job, like a larger upload.
IMPORT_CHECK_MAX_DECOMPRESSED_BYTES = int(
    os.environ.get("IMPORT_CHECK_MAX_DECOMPRESSED_BYTES", str(IMPORT_CHECK_MAX_BYTES))
)
# No line of an imported file (documents, topics, runs, qrels) may be longer than this: an error on its
# line, and the reader never holds more of one line than this.
IMPORT_MAX_LINE_BYTES = int(os.environ.get("IMPORT_MAX_LINE_BYTES", str(1024 * 1024)))

# Security: production values come from the environment; `check --deploy` is clean with them.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", False)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", False)
SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "0"))
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_HSTS_SECONDS > 0
SECURE_HSTS_PRELOAD = SECURE_HSTS_SECONDS > 0
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("BEHIND_PROXY") else None
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
SECURE_REFERRER_POLICY = "same-origin"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "labeling.auth.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # DRF's three, with the project's JSON reader (a body nested too deeply is a 400, not a 500).
    "DEFAULT_PARSER_CLASSES": [
        "labeling.parsers.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "labeling.pagination.Pagination",
    "PAGE_SIZE": 100,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "labeling.api.exception_handler",
    # Requests per client beyond these rates answer 429 with Retry-After. `anon` counts by address
    # (wrong tokens included), `user` by account, `login` the token endpoint by address. An empty value
    # turns that throttle off (benchmarks/rater_load.py does, to measure the server rather than the limit).
    # Counted in the cache; while it is down the throttles let requests through.
    "DEFAULT_THROTTLE_CLASSES": [
        "labeling.throttling.AnonThrottle",
        "labeling.throttling.UserThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": os.environ.get("API_THROTTLE_ANON", "120/min") or None,
        "user": os.environ.get("API_THROTTLE_USER", "1200/min") or None,
        "login": os.environ.get("API_THROTTLE_LOGIN", "20/min") or None,
        # The interleaving search path (`/api/interleaving/<name>/ranking/`, `…/impressions/`), per
        # account: a search front end calls it once per search.
        "interleaving": os.environ.get("API_THROTTLE_INTERLEAVING", "60000/min") or None,
    },
    # The address the throttles count by: REMOTE_ADDR, or behind a proxy the last X-Forwarded-For entry.
    "NUM_PROXIES": 1 if env_bool("BEHIND_PROXY") else 0,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Relevance judgements API",
    "DESCRIPTION": "Collections, runs, pools, judgements, agreement, qrels releases and evaluation.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI's files come from drf-spectacular-sidecar, served by the app itself: /api/docs/ works
    # without internet and under the Content-Security-Policy (no CDN, no inline script).
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "JobStatusEnum": "pooling.models.Job.Status",
        "PoolStatusEnum": "pooling.models.Pool.Status",
        "PoolStrategyEnum": "pooling.models.Pool.Strategy",
    },
}

# Celery: without a broker, tasks run in process (eager) — the embedded default.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "")
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND", "") or None
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
# A task's message is acknowledged only once the task has finished (acks late), and given back to the
# queue when the process running it dies (reject on worker lost): a killed import, build or release is
# delivered again, and the job runs again from the start (every job is atomic and safe to re-run). Each
# worker process reserves one message at a time (prefetch 1), so a killed process holds no others.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
# Redis gives an unacknowledged message (its whole worker died) back after this many seconds. It must be
# longer than the longest job, or a job still running would be delivered a second time; the job sweep
# below ends such a job long before (failed, with its reason), and the late copy then finds it finished.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": int(os.environ.get("CELERY_VISIBILITY_TIMEOUT", "3600")),
}
# Enqueueing when the broker is down fails within about a second (the job is marked failed, 503), not
# after Celery's default retries.
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 2,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.2,
}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULE = {
    "sweep-expired-leases": {
        "task": "judgements.tasks.sweep_expired_leases",
        "schedule": timedelta(minutes=1),
    },
    "sweep-stale-jobs": {
        "task": "pooling.tasks.sweep_stale_jobs",
        "schedule": timedelta(minutes=1),
    },
    "sweep-release-workdirs": {
        "task": "judgements.tasks.sweep_release_workdirs",
        "schedule": timedelta(minutes=1),
    },
}
# A running job's worker stamps `Job.heartbeat_at` this often; a running job whose stamp is older than
# JOB_STALE_SECONDS has lost its worker: the sweep fails it (with the reason) so it can be retried.
JOB_HEARTBEAT_SECONDS = float(os.environ.get("JOB_HEARTBEAT_SECONDS", "10"))
JOB_STALE_SECONDS = float(os.environ.get("JOB_STALE_SECONDS", "120"))
# A job whose worker process died this many times is failed instead of being run again.
JOB_MAX_ATTEMPTS = 3

# Judging
LEASE_MINUTES = int(os.environ.get("LEASE_MINUTES", "10"))
# The judging page refreshes its progress bars (a count over the whole pool) at most this often, not on every
# key press: a rater judging one document a second would otherwise double the server's work per judgement.
JUDGE_PROGRESS_REFRESH_SECONDS = float(os.environ.get("JUDGE_PROGRESS_REFRESH_SECONDS", "5"))
# External model judges a pool manager may pick by name: a JSON object of name -> argv, e.g.
# {"umbrela": ["/opt/judges/venv/bin/python", "/opt/judges/umbrela.py"]}. Set by whoever runs the server:
# a page never takes a command (judgements.judges.external_commands).
EXTERNAL_JUDGES: dict[str, list[str]] = json.loads(os.environ.get("EXTERNAL_JUDGES", "") or "{}")
# Processes that write a large release on PostgreSQL (judgements.release_halves): 2 splits its topics over
# two, 1 writes every release in the one process that runs it.
RELEASE_PROCESSES = int(os.environ.get("RELEASE_PROCESSES", "2"))
# Key for the blind presentation order (a keyed hash of the docid); defaults to SECRET_KEY.
BLIND_ORDER_KEY = os.environ.get("BLIND_ORDER_KEY", SECRET_KEY)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}

# Cache: carries live progress of jobs running inside a transaction. Must be shared between the web
# process and the workers in production (Redis); defaults to the broker when it is Redis.
CACHE_URL = os.environ.get("CACHE_URL", "") or (
    CELERY_BROKER_URL if CELERY_BROKER_URL.startswith("redis") else ""
)
# `labeling.cache.RedisCache` degrades when Redis is down: reads miss, writes are dropped (progress falls
# back to the job row, cached reports are recomputed), instead of failing the job or the page.
CACHES = {
    "default": (
        {
            "BACKEND": "labeling.cache.RedisCache",
            "LOCATION": CACHE_URL,
            # Keys under a prefix of their own (and `clear()` only those) where one Redis database is
            # shared: by deployments, or by test runs (tests/conftest.py gives each run one).
            "KEY_PREFIX": os.environ.get("CACHE_KEY_PREFIX", ""),
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 2},
        }
        if CACHE_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}
# Sessions in the database, their row read by one prepared statement on PostgreSQL (`labeling.sessions`).
SESSION_ENGINE = "labeling.sessions"

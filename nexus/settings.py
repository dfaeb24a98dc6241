"""Nexus settings: every value that varies between machines comes from the environment."""

from __future__ import annotations

from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from nexus.database_settings import database_settings
from nexus.env import (
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_list,
    env_pairs,
    env_required,
    env_str,
    file_secret,
    load_env_file,
)
from nexus.logging import logging_settings
from nexus.store_settings import cache_settings, count_per_window, throttle_rate

BASE_DIR = Path(__file__).resolve().parent.parent

# --- Core -------------------------------------------------------------------

# The embedded default's settings file (bin/run writes it); the environment wins.
ENV_FILE = load_env_file(BASE_DIR / ".env")

DEBUG = env_bool("DJANGO_DEBUG", False)
# The secret key: from the environment, else the file bin/run and bin/stack
# generate once; only debugging may go without one.
SECRET_KEY = (
    env_str("DJANGO_SECRET_KEY").strip()
    or file_secret(env_str("NEXUS_SECRET_KEY_FILE", str(BASE_DIR / "var" / "secret_key")))
    or ("insecure-debug-only-key" if DEBUG else env_required("DJANGO_SECRET_KEY"))
)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

# --- HTTPS (secure by default once DEBUG is off; each switch can be turned
# off for a plain-http local stack) -------------------------------------------

# Behind a TLS-terminating proxy that sets X-Forwarded-Proto, Django must
# trust that header or every request looks like http and redirects forever.
# Only enable it when the proxy strips the header from client requests.
_behind_proxy = env_bool("DJANGO_BEHIND_PROXY", False)
if _behind_proxy:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    USE_X_FORWARDED_HOST = env_bool("DJANGO_USE_X_FORWARDED_HOST", False)
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", not DEBUG)
# Load balancers probe over plain http from inside the network.
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
SECURE_HSTS_SECONDS = env_int("DJANGO_SECURE_HSTS_SECONDS", 0 if DEBUG else 31_536_000, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("DJANGO_SECURE_HSTS_PRELOAD", True)
SESSION_COOKIE_SECURE = env_bool("DJANGO_SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("DJANGO_CSRF_COOKIE_SECURE", not DEBUG)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "nexus.shared_store",
    "nexus.api.keys",
    "sessions_app",
    "notes",
    "summaries",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # JSON for API failures, 503 for an unreachable database (nexus.failures).
    "nexus.failures.FailureMiddleware",
    "nexus.web.AdminContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "nexus.urls"
WSGI_APPLICATION = "nexus.wsgi.application"
ASGI_APPLICATION = "nexus.asgi.application"

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
            ],
        },
    },
]

# --- Database ---------------------------------------------------------------

DATABASES = database_settings(BASE_DIR)  # nexus/database_settings.py: the pool, timeouts, SQLite's WAL
# PostgreSQL cancels a web request's statement after this long (0: the server's setting); tasks
# and management commands are not bounded (nexus/statement_timeout.py).
DATABASE_STATEMENT_TIMEOUT_MS = env_int("DATABASE_STATEMENT_TIMEOUT_MS", 10_000, minimum=0)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Auth, i18n, static -----------------------------------------------------

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
# Only an existing folder: a missing one is a warning in every system check.
STATICFILES_DIRS = [d for d in [BASE_DIR / "static"] if d.is_dir()]
# Served by WhiteNoise after collectstatic; hashed, compressed names outside
# debugging so files can be cached forever.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

# --- REST framework ---------------------------------------------------------

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "nexus.api.authentication.CachedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_THROTTLE_CLASSES": [
        "nexus.api.throttling.AnonThrottle",
        "nexus.api.throttling.UserThrottle",
    ],
    "EXCEPTION_HANDLER": "nexus.api.errors.exception_handler",
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    # DRF's negotiation, minus the parsing for a plain JSON call.
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "nexus.api.negotiation.PlainAcceptNegotiation",
    # Throttles tell anonymous clients apart by address. X-Forwarded-For is
    # only believed from the proxies in front (a client could forge it).
    "NUM_PROXIES": env_int("API_NUM_PROXIES", 1 if _behind_proxy else 0, minimum=0),
    # The browsable API only while debugging: content negotiation and HTML
    # rendering cost every request something, and clients want JSON.
    "DEFAULT_RENDERER_CLASSES": ["nexus.api.renderers.JSONRenderer"]
    + (["rest_framework.renderers.BrowsableAPIRenderer"] if DEBUG else []),
}
# Throttle rates as "<n>/<second|minute|hour|day>"; an empty value turns one off.
API_THROTTLE_ANON = throttle_rate("API_THROTTLE_ANON", "300/minute")
API_THROTTLE_USER = throttle_rate("API_THROTTLE_USER", "20000/minute")
# Failed logins (web, admin, POST /api/auth/token/) per (address, username)
# and per address, never per username alone: "<n>/<length><s|m|h|d>", empty: off.
LOGIN_FAILURE_LIMIT = count_per_window("LOGIN_FAILURE_LIMIT", "10/15m")
LOGIN_FAILURE_ADDRESS_LIMIT = count_per_window("LOGIN_FAILURE_ADDRESS_LIMIT", "50/15m")
# A token is looked up once per this many seconds per process (0: every request).
API_TOKEN_CACHE_SECONDS = env_int("API_TOKEN_CACHE_SECONDS", 30, minimum=0)
API_PAGE_SIZE = env_int("API_PAGE_SIZE", 100, minimum=1)
API_MAX_PAGE_SIZE = env_int("API_MAX_PAGE_SIZE", 1000, minimum=1)
# How long the answer to a write sent with an Idempotency-Key is kept for its retries
# (sessions_app.idempotency).
IDEMPOTENCY_KEY_TTL_SECONDS = env_int("IDEMPOTENCY_KEY_TTL_SECONDS", 86_400, minimum=60)
API_BULK_MAX_EPISODES = env_int("API_BULK_MAX_EPISODES", 500, minimum=1)
# The MCP server over streamable HTTP (`manage.py mcp --http`, the Procfile's `mcp`): its own
# process, as the SDK's server is ASGI. Clients send an API key as `Authorization: Bearer`.
MCP_HOST = env_str("MCP_HOST") or "0.0.0.0"
MCP_PORT = env_int("MCP_PORT", 8100, minimum=1, maximum=65535)
EPISODE_MAX_CHARS = env_int("EPISODE_MAX_CHARS", 100_000, minimum=1)
SUMMARY_CONTENT_MAX_CHARS = env_int("SUMMARY_CONTENT_MAX_CHARS", 20_000, minimum=1)
API_METADATA_MAX_BYTES = env_int("API_METADATA_MAX_BYTES", 16_384, minimum=2)
# Deepest nesting of objects and arrays any stored JSON may have (metadata on
# every path): every page that shows it renders it without running out of stack.
JSON_MAX_DEPTH = env_int("JSON_MAX_DEPTH", 32, minimum=1, maximum=100)
# Largest request body read into memory (a bulk write of API_BULK_MAX_EPISODES
# episodes has to fit); a larger one is answered 413.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DJANGO_DATA_UPLOAD_MAX_BYTES", 10 * 1024 * 1024, minimum=1024)
SPECTACULAR_SETTINGS = {
    "TITLE": "Nexus API",
    "DESCRIPTION": "Rolling conversation memory for LLM chat applications.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- Summarization, context and retrieval (nexus/memory_settings.py) ---------
# Imported here, after the .env file is read, since they read the environment too.
from nexus.memory_settings import *  # noqa: F403

# --- Retention ----------------------------------------------------------------

# Sessions with no write for this many days are deleted (0, the default: kept
# forever), as are summary revisions older than SUMMARY_REVISION_RETENTION_DAYS.
# The beat runs the purge every RETENTION_PURGE_SECONDS; without beat,
# ``manage.py purge_expired`` does.
SESSION_RETENTION_DAYS = env_int("SESSION_RETENTION_DAYS", 0, minimum=0)
SUMMARY_REVISION_RETENTION_DAYS = env_int("SUMMARY_REVISION_RETENTION_DAYS", 0, minimum=0)
RETENTION_PURGE_SECONDS = env_int("RETENTION_PURGE_SECONDS", 3600, minimum=60)

# --- Inference --------------------------------------------------------------

INFERENCE_BACKEND = env_choice("INFERENCE_BACKEND", "offline", ("offline", "ollama", "openai", "nexus"))
INFERENCE_SERVICE_URL = env_str("INFERENCE_SERVICE_URL", "http://localhost:3001").rstrip("/")
INFERENCE_API_KEY = env_str("INFERENCE_API_KEY")
INFERENCE_TIMEOUT_SECONDS = env_float("INFERENCE_TIMEOUT_SECONDS", 60.0, minimum=0.1)
INFERENCE_CONNECT_TIMEOUT_SECONDS = env_float("INFERENCE_CONNECT_TIMEOUT_SECONDS", 5.0, minimum=0.1)
UTILITY_MODEL = env_str("UTILITY_MODEL", "qwen2.5:1.5b")
CHAT_MODEL = env_str("CHAT_MODEL", "qwen2.5:7b")
# Model names a /v1 client may send for CHAT_MODEL, so a framework's default name works:
# "gpt-4o-mini=qwen2.5:7b,*=qwen2.5:7b" ("*": any other name). Each must name CHAT_MODEL.
OPENAI_MODEL_ALIASES = env_pairs("OPENAI_MODEL_ALIASES")
if stray := sorted(name for name, target in OPENAI_MODEL_ALIASES.items() if target != CHAT_MODEL):
    raise ImproperlyConfigured(
        f"Environment variable OPENAI_MODEL_ALIASES: {', '.join(stray)} "
        f"must map to CHAT_MODEL={CHAT_MODEL!r}."
    )
# The most a chat turn (web, API or OpenAI-compatible) sends the chat model,
# whatever budget the caller asks for: system messages, memory and question.
# The longest a chat turn (web, API or OpenAI-compatible) may take, model reply included:
# past it the turn ends with an error (504, or an error event in a stream) and nothing is stored.
CHAT_TURN_TIMEOUT_SECONDS = env_float("CHAT_TURN_TIMEOUT_SECONDS", 120.0, minimum=1.0, maximum=3600.0)
CHAT_MAX_PROMPT_TOKENS = env_int("CHAT_MAX_PROMPT_TOKENS", 8000, minimum=100, maximum=1_000_000)
# The largest reply cap (max_tokens) a /v1 caller may ask for; more answers 400
# naming the parameter, before memory is built or the model asked. The default
# and a full prompt fit OLLAMA_NUM_CTX_MAX's default window.
CHAT_MAX_REPLY_TOKENS = env_int("CHAT_MAX_REPLY_TOKENS", 16_384, minimum=1, maximum=1_000_000)
# Ollama: the largest context window (options.num_ctx) a call may ask for.
# Each call asks for the smallest power of two from 4096 that holds its prompt
# (+15% for the model's tokenizer) and its reply cap; a prompt that needs more
# than this fails at once, as a permanent error, instead of being cut.
OLLAMA_NUM_CTX_MAX = env_int("OLLAMA_NUM_CTX_MAX", 32_768, minimum=4096)
if INFERENCE_BACKEND != "offline" and not INFERENCE_SERVICE_URL.startswith(("http://", "https://")):
    raise ImproperlyConfigured(
        f"Environment variable INFERENCE_SERVICE_URL={INFERENCE_SERVICE_URL!r} must be an http(s) URL."
    )

# --- Celery -----------------------------------------------------------------

CELERY_BROKER_URL = env_str("CELERY_BROKER_URL")
if CELERY_BROKER_URL and not CELERY_BROKER_URL.startswith(("redis://", "rediss://", "memory://", "amqp://")):
    raise ImproperlyConfigured(
        f"Environment variable CELERY_BROKER_URL={CELERY_BROKER_URL!r} must be a redis://, rediss:// or amqp:// URL."
    )
# Without a broker, tasks run in-process: on the embedded worker of a web
# process (nexus.embedded_worker), else where they are sent.
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 300, minimum=1)
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 360, minimum=1)
# Redelivery of an unacknowledged task after a whole worker dies; kept above
# the hard time limit so a slow but healthy task is never delivered twice.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 900, minimum=1),
}
# A worker or beat that loses the broker (Redis restarting, a dropped
# connection mid-delivery) reconnects, for as long as it takes, instead of
# exiting; the Procfile runs both under nexus.respawn besides, for any exit.
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_TIMEZONE = TIME_ZONE
# Worker logs go through LOGGING above (LOG_FORMAT=json included), not Celery's own format.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_TASK_DEFAULT_QUEUE", "celery")
# The sweep finds sessions whose trigger was lost (broker outage, lost message,
# failed run due for another try).
CELERY_BEAT_SCHEDULE = {
    "summaries-sweep": {
        "task": "summaries.tasks.sweep_pending_summaries",
        "schedule": float(SUMMARY_SWEEP_SECONDS),
    },
    "retention-purge": {
        "task": "summaries.tasks.purge_expired",
        "schedule": float(RETENTION_PURGE_SECONDS),
    },
}

# --- Cache: throttle counts, failed logins, token revocation (nexus/store_settings.py) ---

CACHE_URL, CACHES = cache_settings(CELERY_BROKER_URL)

# --- Logging ----------------------------------------------------------------

# LOG_FORMAT=json: one JSON object per line with every ``extra`` field.
# User text (messages, replies, summaries) stays out of logs unless LOG_CONTENT=1.
LOG_FORMAT = env_choice("LOG_FORMAT", "plain", ("plain", "json"))
LOG_CONTENT = env_bool("LOG_CONTENT", False)
LOGGING = logging_settings(log_format=LOG_FORMAT, level=env_str("LOG_LEVEL", "INFO"))

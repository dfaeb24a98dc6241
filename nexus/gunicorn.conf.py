"""gunicorn settings for the web process (``gunicorn nexus.wsgi -c nexus/gunicorn.conf.py``).

Sized for a 2-core machine that also runs a Celery worker. Requests spend
most of their time waiting on PostgreSQL and on the model server (a chat
turn waits for the whole reply, or streams it), not on the CPU, so each
process serves several requests with threads instead of adding processes:
WEB_CONCURRENCY processes (default 2, one per core) x GUNICORN_THREADS
threads (default 4) = 8 requests in flight for the memory of 2 processes.
"""

from __future__ import annotations

import os


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise SystemExit(f"Environment variable {name}={raw!r} is not a valid integer.") from None


# PORT is what platforms (and honcho) hand the web process; GUNICORN_BIND overrides the whole address.
bind = os.environ.get("GUNICORN_BIND") or f"0.0.0.0:{_int('PORT', 8000)}"
workers = _int("WEB_CONCURRENCY", 2)
# gthread, answering gunicorn's own errors (414, 431, 400) in JSON like the API.
worker_class = "nexus.gunicorn_support.JsonErrorWorker"
threads = _int("GUNICORN_THREADS", 4)

# A streamed chat reply can take a minute on a small model; the gthread
# worker keeps heartbeating while a thread waits, so this only catches a
# process that is truly stuck.
timeout = _int("GUNICORN_TIMEOUT", 120)
graceful_timeout = 30
keepalive = 5

# Recycle processes now and then so a slow leak cannot grow without bound;
# the jitter keeps both processes from restarting at the same moment.
max_requests = _int("GUNICORN_MAX_REQUESTS", 1000)
max_requests_jitter = 100

# Heartbeat files on tmpfs: a slow disk cannot make a healthy worker look dead.
if os.path.isdir("/dev/shm"):
    worker_tmp_dir = "/dev/shm"

# Logs to stdout/stderr, where the process manager collects them.
accesslog = "-"
errorlog = "-"
# Control characters in access-line values escaped: a path's %0a starts no forged line.
logger_class = "nexus.gunicorn_support.AccessLogger"
loglevel = os.environ.get("LOG_LEVEL", "info").lower()
# Query strings can carry what people wrote (``/context/?question=...``), so the
# access log leaves them out unless LOG_CONTENT=1, like the application logs.
_query = "%(q)s" if os.environ.get("LOG_CONTENT", "").strip().lower() in {"1", "true", "yes", "on"} else ""
access_log_format = (
    '%(h)s "%(m)s %(U)s' + ("?" + _query if _query else "") + ' %(H)s" %(s)s %(B)s %(M)sms "%(a)s"'
)
# X-Forwarded-* is trusted only from these addresses (the proxy in front);
# gunicorn also reads FORWARDED_ALLOW_IPS itself.
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1,::1")
# The runtime control socket defaults to one path per user: several stacks on
# one machine would fight over it, and nothing here uses it.
control_socket_disable = True

# With LOG_FORMAT=json gunicorn's own lines (start-up, access log) are JSON
# lines too, like everything Django and Celery log.
if os.environ.get("LOG_FORMAT", "").strip().lower() == "json":
    logconfig_dict = {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": "nexus.logging.JsonFormatter"}},
        "handlers": {
            "error_console": {
                "class": "logging.StreamHandler",
                "formatter": "json",
                "stream": "ext://sys.stderr",
            },
            "console": {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stdout"},
        },
        "loggers": {
            "gunicorn.error": {"level": loglevel.upper(), "handlers": ["error_console"], "propagate": False},
            "gunicorn.access": {"level": "INFO", "handlers": ["console"], "propagate": False},
        },
    }

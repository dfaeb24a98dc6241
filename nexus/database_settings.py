"""``DATABASES`` from the environment; ``nexus.settings`` calls ``database_settings``.

On PostgreSQL the connections come from a pool (Django's ``OPTIONS["pool"]``,
psycopg_pool) unless ``DATABASE_CONN_MAX_AGE`` asks for Django's persistent
connections instead. Persistent connections belong to a thread: a server
that ends its thread with the request (Django's threaded server, ASGI, which
closes connections at the end of every request) would open a new PostgreSQL
connection per request (a few milliseconds of fork, authentication and cold
catalog caches on every chat turn). A pool hands the next thread a warm
connection. gunicorn's long-lived threads are served either way.

A connection back in the pool is reset (``reset_connection``): what a
request set on it (its statement timeout, ``nexus.statement_timeout``) does
not reach the next user, which may be the embedded worker.
"""

from __future__ import annotations

import os
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from nexus.env import env_bool, env_int, env_str

#: Without a pool: how long a thread keeps its connection (seconds).
DEFAULT_CONN_MAX_AGE = 60


def reset_connection(conn: Any) -> None:
    """The pool's ``reset``: a returned connection's session settings back to the server's."""
    with conn.transaction():  # leaves the connection idle, as the pool requires
        conn.execute("RESET statement_timeout")


def database_settings(base_dir: Any) -> dict[str, Any]:
    """``DATABASES`` for ``DATABASE_URL`` (SQLite ``db.sqlite3`` in ``base_dir`` when unset)."""
    url = env_str("DATABASE_URL") or f"sqlite:///{base_dir / 'db.sqlite3'}"
    try:
        default = dj_database_url.parse(url)
    except ValueError as exc:  # dj-database-url raises ValueError for unknown schemes
        raise ImproperlyConfigured(
            f"Environment variable DATABASE_URL is not a valid database URL: {exc}"
        ) from exc
    default["ATOMIC_REQUESTS"] = False
    if default["ENGINE"] == "django.db.backends.postgresql":
        _postgresql(default)
    else:
        default["CONN_MAX_AGE"] = env_int("DATABASE_CONN_MAX_AGE", DEFAULT_CONN_MAX_AGE, minimum=0)
    if default["ENGINE"] == "django.db.backends.sqlite3":
        # WAL lets the web process read while a task writes; a busy timeout
        # keeps short write bursts from failing with "database is locked".
        default["OPTIONS"] = {
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    return {"default": default}


def _postgresql(default: dict[str, Any]) -> None:
    options = default.setdefault("OPTIONS", {})
    # An unreachable server fails a request (and /healthz) in seconds, not after the OS gives up.
    connect_timeout = env_int("DATABASE_CONNECT_TIMEOUT", 5, minimum=1)
    options.setdefault("connect_timeout", connect_timeout)
    max_age_given = os.environ.get("DATABASE_CONN_MAX_AGE", "").strip() != ""
    max_age = env_int("DATABASE_CONN_MAX_AGE", DEFAULT_CONN_MAX_AGE, minimum=0)
    pool = env_bool("DATABASE_POOL", not max_age_given)
    if not pool:
        default["CONN_MAX_AGE"] = max_age
        return
    if max_age_given and max_age:
        raise ImproperlyConfigured(
            "Environment variables DATABASE_POOL=1 and DATABASE_CONN_MAX_AGE: the pool keeps the "
            "connections open; leave DATABASE_CONN_MAX_AGE unset (or 0), or turn DATABASE_POOL off."
        )
    # Django returns a pooled connection at the end of each request (CONN_MAX_AGE 0).
    default["CONN_MAX_AGE"] = 0
    size = env_int("DATABASE_POOL_MAX_SIZE", 8, minimum=1)
    options["pool"] = {
        "min_size": 1,
        "max_size": size,
        # How long a request waits for a connection before it fails (503, nexus.failures):
        # as long as a connection attempt may take, so a lost server still fails it in seconds.
        "timeout": env_int("DATABASE_POOL_TIMEOUT", connect_timeout, minimum=1),
        "reset": reset_connection,
    }

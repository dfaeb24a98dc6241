"""Settings of the shared store (the cache) and the limits counted in it,
read from the environment; ``nexus.settings`` calls these.

Throttle counts, failed logins and token revocation marks live in Django's
default cache. With Redis every process shares them: ``CACHE_URL``, else the
broker's Redis server and database when the broker is Redis. Django's keys
there all start with ``nexus-cache:``, which none of Celery's do (its queues
are named by CELERY_TASK_DEFAULT_QUEUE, its own keys start with ``_kombu.``
and ``unacked``). Without Redis the store is the database (``db://``, the
default then; tables of ``nexus.shared_store``), so every process of a
deployment without Redis (gunicorn's workers, the embedded default) still
shares one store. ``locmem://`` keeps it in each process's memory: for one
process only, as nothing is shared.
"""

from __future__ import annotations

import re
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from nexus.env import env_str, env_url

KEY_PREFIX = "nexus-cache"
DATABASE_CACHE_TABLE = "nexus_cache"  # nexus.shared_store.models.CacheEntry
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def cache_settings(broker_url: str) -> tuple[str, dict[str, Any]]:
    """``CACHE_URL`` and the ``CACHES`` it stands for."""
    default = broker_url if broker_url.startswith(("redis://", "rediss://")) else "db://"
    url = env_url("CACHE_URL", default, ("redis", "rediss", "db", "locmem"))
    if url.startswith("locmem://"):
        return url, {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "nexus"}}
    if url.startswith("db://"):
        return url, {
            "default": {
                "BACKEND": "django.core.cache.backends.db.DatabaseCache",
                "LOCATION": DATABASE_CACHE_TABLE,
                "KEY_PREFIX": KEY_PREFIX,
                # Its rows are few (token generations, queued regenerations: counts live in
                # nexus_counter); the default of 300 would cull marks still in use.
                "OPTIONS": {"MAX_ENTRIES": 100_000},
            }
        }
    return url, {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": url,
            "KEY_PREFIX": KEY_PREFIX,
            # A Redis that stops answering fails a request in seconds, not minutes.
            "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 2},
        }
    }


def throttle_rate(name: str, default: str) -> str:
    """A DRF rate, "<n>/<second|minute|hour|day>"; empty turns the throttle off."""
    rate = env_str(name, default)
    if rate and not re.fullmatch(r"[1-9][0-9]*/(s|sec|second|m|min|minute|h|hour|d|day)", rate):
        raise ImproperlyConfigured(
            f"Environment variable {name}={rate!r} must look like 100/minute (second, minute, hour or day)."
        )
    return rate


def count_per_window(name: str, default: str) -> tuple[int, int] | None:
    """"<n>/<length><s|m|h|d>" (e.g. 10/15m) as (n, seconds); empty: no limit."""
    raw = env_str(name, default).strip()
    if not raw:
        return None
    match = re.fullmatch(r"([1-9][0-9]*)/([1-9][0-9]*)?([smhd])", raw)
    if not match:
        raise ImproperlyConfigured(
            f"Environment variable {name}={raw!r} must look like 10/15m (a count per s, m, h or d), or be empty."
        )
    return int(match[1]), int(match[2] or 1) * _UNITS[match[3]]

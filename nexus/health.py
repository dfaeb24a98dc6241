"""``GET /healthz``: does every service Nexus depends on answer?

Checks the database (``SELECT 1``), the Celery broker (a Redis ``PING``, or
a connection for other transports) and the inference backend (its
``health()`` call), each with a short timeout. The broker and inference
checks run in threads beside the database check, so the whole probe takes
about as long as its slowest part and never more than ``HEALTH_TIMEOUT``.

200 with ``{"status": "ok", "checks": {...}}`` when all answer; 503 with
``"status": "fail"`` and ``"failed": [names]`` otherwise. No authentication,
so the report names parts and error kinds only: no URLs, hosts or keys.
The full error goes to the log (logger ``nexus.health``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from nexus import embedded_worker

# Seconds for the broker's socket operations and for waiting on any one check.
BROKER_TIMEOUT = 1.0
HEALTH_TIMEOUT = 5.0

logger = logging.getLogger("nexus.health")


class CheckFailed(Exception):
    pass


def check_database() -> dict[str, Any]:
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # Bounded even when the server is up but stuck behind locks.
            cursor.execute("SET LOCAL statement_timeout = 2000")
        cursor.execute("SELECT 1")
        if cursor.fetchone() != (1,):
            raise CheckFailed("unexpected answer to SELECT 1")
    return {"vendor": connection.vendor}


def broker_url() -> str:
    """The broker tasks are sent to, or "" when they run in-process."""
    if getattr(settings, "CELERY_TASK_ALWAYS_EAGER", False):
        return ""
    url = getattr(settings, "CELERY_BROKER_URL", "") or ""
    return "" if url.startswith("memory://") else url


def check_broker() -> dict[str, Any]:
    url = broker_url()
    if not url:
        # The web process's embedded worker (a management command runs none).
        return {"mode": "in-process", "worker": "running" if embedded_worker.worker.running else "not started"}
    if url.startswith(("redis://", "rediss://")):
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        # One attempt: a probe that retries reports a dead broker late.
        client = redis.Redis.from_url(
            url,
            socket_timeout=BROKER_TIMEOUT,
            socket_connect_timeout=BROKER_TIMEOUT,
            retry=Retry(NoBackoff(), 0),
        )
        try:
            if not client.ping():
                raise CheckFailed("no PONG")
        finally:
            client.close()
        return {"transport": "redis"}
    from kombu import Connection

    with Connection(url, connect_timeout=BROKER_TIMEOUT) as conn:
        conn.ensure_connection(max_retries=1, timeout=BROKER_TIMEOUT)
    return {"transport": url.split("://", 1)[0]}


def check_inference() -> dict[str, Any]:
    from summaries.inference import get_client

    get_client().health()
    return {"backend": settings.INFERENCE_BACKEND}


CHECKS: dict[str, Callable[[], dict[str, Any]]] = {
    "database": check_database,
    "broker": check_broker,
    "inference": check_inference,
}


def _timed(name: str, check: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    started = time.monotonic()
    try:
        result = {"ok": True, **check()}
    except Exception as exc:  # noqa: BLE001 - any failure is a failed check, reported, never raised
        # Only the kind of error leaves the process: messages can name hosts.
        result = {"ok": False, "error": type(exc).__name__}
        logger.warning("health check %s failed: %s", name, exc, extra={"check": name})
    result["duration_ms"] = round((time.monotonic() - started) * 1000)
    return result


def _threaded(name: str, check: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    try:
        return _timed(name, check)
    finally:
        # A check that touched the ORM in this thread must not leave its connection open.
        connection.close()


def run_checks() -> dict[str, dict[str, Any]]:
    """Every check's result by name, in a stable order."""
    pool = ThreadPoolExecutor(max_workers=len(CHECKS) - 1, thread_name_prefix="healthz")
    try:
        futures = {
            name: pool.submit(_threaded, name, check) for name, check in CHECKS.items() if name != "database"
        }
        # The database check uses this request's own connection.
        results = {"database": _timed("database", CHECKS["database"])}
        deadline = time.monotonic() + HEALTH_TIMEOUT
        for name, future in futures.items():
            try:
                results[name] = future.result(timeout=max(0.0, deadline - time.monotonic()))
            except FutureTimeout:
                results[name] = {"ok": False, "error": f"no answer within {HEALTH_TIMEOUT:g}s"}
                logger.warning("health check %s did not answer in time", name, extra={"check": name})
    finally:
        # Do not wait for a hung check; its thread ends on its own timeout.
        pool.shutdown(wait=False, cancel_futures=True)
    return {name: results[name] for name in CHECKS}


@never_cache
@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    checks = run_checks()
    failed = [name for name, result in checks.items() if not result["ok"]]
    body = {"status": "fail" if failed else "ok", "failed": failed, "checks": checks}
    return JsonResponse(body, status=503 if failed else 200)

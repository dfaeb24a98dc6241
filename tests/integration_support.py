"""Fixtures and helpers for integration tests: PostgreSQL + Redis + real Celery
worker processes + the fake model server in its own process.

Use them from a test module with::

    from tests.integration_support import *  # noqa: F401,F403 (fixtures)

    pytestmark = [pytest.mark.integration]

    def test_something(worker_fleet, fake_model_process):
        fleet = worker_fleet(2, model_url=fake_model_process.url)
        ...

What they guarantee:

- ``live_database``: the pytest-django test database with data committed for
  real (``transactional_db``), and a ``DATABASE_URL`` naming that test
  database for subprocesses. PostgreSQL only.
- ``redis_url``: ``NEXUS_TEST_REDIS_URL`` if it answers a PING.
- ``own_redis``: a private ``redis-server`` on a free port, for tests that stop
  and restart the broker; the machine's Redis is never touched.
- ``worker_fleet``: starts N ``celery -A nexus worker`` processes (prefork,
  concurrency 1 each) on a queue name of their own, so parallel runs never
  take each other's messages; points the test process's Celery app at the
  same broker and queue; waits until every worker is ready; stops them all
  (their whole process groups) afterwards.
- ``wait_until``: a bounded poll; it fails the test with a message instead
  of hanging. ``WorkerFleet.wait_drained`` waits until the fleet's queue is
  empty and no message is in flight (taken but not acknowledged).

A missing service skips the test, unless ``NEXUS_REQUIRE_SERVICES=1`` (CI),
where it fails. ``own_redis``, ``wait_until`` and the process helpers live in
``tests.process_support`` and are re-exported here.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from django.db import connection

from nexus.celery import app as celery_app
from tests.process_support import (
    RedisServer,
    env_without,
    free_port,
    own_redis,
    redis_answers,
    require_or_skip,
    services_required,
    signal_group,
    start_logged,
    wait_until,
)

__all__ = [
    "LiveDatabase",
    "RedisServer",
    "WorkerFleet",
    "free_port",
    "live_database",
    "own_redis",
    "redis_url",
    "require_or_skip",
    "services_required",
    "use_broker",
    "wait_until",
    "worker_fleet",
]

# --- PostgreSQL ----------------------------------------------------------------------


@dataclass(frozen=True)
class LiveDatabase:
    url: str  # DATABASE_URL for subprocesses: the test database
    name: str


@pytest.fixture
def live_database(transactional_db: None) -> LiveDatabase:
    """The test database, committed for real and reachable from other processes."""
    if connection.vendor != "postgresql":
        require_or_skip("integration tests need PostgreSQL (set DATABASE_URL=postgres://...)")
    s = connection.settings_dict
    auth = quote(s.get("USER") or "", safe="")
    if s.get("PASSWORD"):
        auth += ":" + quote(s["PASSWORD"], safe="")
    host = s.get("HOST") or "127.0.0.1"
    port = s.get("PORT") or 5432
    url = f"postgres://{auth}@{host}:{port}/{s['NAME']}"
    return LiveDatabase(url=url, name=s["NAME"])


# --- Redis -----------------------------------------------------------------------------


@pytest.fixture
def redis_url() -> str:
    url = os.environ.get("NEXUS_TEST_REDIS_URL", "").strip()
    if not url:
        require_or_skip("NEXUS_TEST_REDIS_URL is not set")
    if not redis_answers(url):
        require_or_skip(f"Redis at {url} does not answer")
    return url


# --- the test process's Celery app -------------------------------------------------------


def _reset_connections() -> None:
    from kombu import pools

    pool = celery_app._pool
    if pool is not None:
        with contextlib.suppress(Exception):
            pool.force_close_all()
    celery_app._pool = None
    # kombu keeps producer pools per connection URL process-wide; a closed
    # one would be handed out again for the same URL.
    with contextlib.suppress(Exception):
        pools.reset()
    amqp = celery_app.__dict__.get("amqp")
    if amqp is not None:
        amqp._producer_pool = None
        # Cached from the old default queue name.
        for cached in ("queues", "default_queue", "router"):
            amqp.__dict__.pop(cached, None)


@contextlib.contextmanager
def use_broker(broker_url: str, queue: str) -> Iterator[None]:
    """Make this process enqueue for real to ``broker_url``/``queue`` (the test
    settings run tasks eagerly), and put everything back afterwards."""
    keys = ("broker_url", "task_always_eager", "task_default_queue", "broker_transport_options")
    saved = {key: celery_app.conf[key] for key in keys}
    celery_app.conf.update(
        broker_url=broker_url,
        task_always_eager=False,
        task_default_queue=queue,
        broker_transport_options={"visibility_timeout": 60},
    )
    _reset_connections()
    try:
        yield
    finally:
        celery_app.conf.update(saved)
        _reset_connections()


# --- worker processes ----------------------------------------------------------------


@dataclass
class Worker:
    name: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def children(self) -> list[int]:
        """Pids of the pool's child processes (the ones that run tasks)."""
        path = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        try:
            return [int(pid) for pid in path.read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            return []


@dataclass
class WorkerFleet:
    broker_url: str
    queue: str
    env: dict[str, str]
    log_dir: Path
    workers: list[Worker] = field(default_factory=list)

    def start(self, count: int, timeout: float = 60.0) -> WorkerFleet:
        for i in range(count):
            name = f"w{i}-{self.queue}"
            log_path = self.log_dir / f"{name}.log"
            process = start_logged(
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    "nexus",
                    "worker",
                    "--pool",
                    "prefork",
                    "--concurrency",
                    "1",
                    "--queues",
                    self.queue,
                    "--hostname",
                    f"{name}@%h",
                    "--loglevel",
                    "INFO",
                    "--without-gossip",
                    "--without-mingle",
                    "--without-heartbeat",
                    "--prefetch-multiplier",
                    "1",
                ],
                log_path=log_path,
                env=self.env,
            )
            self.workers.append(Worker(name, process, log_path))
        for worker in self.workers:
            wait_until(
                lambda w=worker: " ready." in w.log() or w.process.poll() is not None,
                timeout=timeout,
                message=f"worker {worker.name} to be ready",
            )
            if worker.process.poll() is not None:
                pytest.fail(f"worker {worker.name} exited:\n{worker.log()[-3000:]}", pytrace=False)
        return self

    def stop(self) -> None:
        # All asked at once, then one deadline for all; the SIGKILL also ends
        # pool children left behind by a parent that did exit.
        for worker in self.workers:
            signal_group(worker.process, signal.SIGTERM)
        deadline = time.monotonic() + 15
        for worker in self.workers:
            with contextlib.suppress(subprocess.TimeoutExpired):
                worker.process.wait(max(0.1, deadline - time.monotonic()))
            signal_group(worker.process, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                worker.process.wait(5)

    def _redis(self) -> Any:
        import redis

        return redis.Redis.from_url(self.broker_url, socket_timeout=2)

    def queue_length(self) -> int:
        """Messages waiting in this fleet's queue."""
        return int(self._redis().llen(self.queue))

    def in_flight(self) -> int:
        """Messages of this fleet's queue a worker took but has not acknowledged
        (running, or waiting out a retry countdown). kombu keeps them in one
        ``unacked`` hash per Redis database as ``[message, exchange, routing_key]``."""
        count = 0
        for raw in self._redis().hvals("unacked"):
            try:
                routing_key = json.loads(raw)[2]
            except (ValueError, IndexError, TypeError):
                continue
            count += routing_key == self.queue
        return count

    def wait_drained(self, *, timeout: float = 60.0, until: Callable[[], Any] | None = None) -> None:
        """Wait until the queue is empty, nothing is in flight, and ``until()``
        (if given) holds; bounded by ``timeout``."""
        wait_until(
            lambda: self.queue_length() == 0 and self.in_flight() == 0 and (until is None or until()),
            timeout=timeout,
            message=f"queue {self.queue} to drain\n{self.logs()}",
        )

    def forget_queue(self) -> None:
        """Delete what kombu keeps in Redis for this queue."""
        with contextlib.suppress(Exception):
            self._redis().delete(
                self.queue, f"_kombu.binding.{self.queue}", f"_kombu.binding_permanent.{self.queue}"
            )

    def logs(self) -> str:
        return "\n".join(f"--- {w.name}\n{w.log()[-4000:]}" for w in self.workers)


def worker_env(
    *, database_url: str, broker_url: str, queue: str, model_url: str, **overrides: str
) -> dict[str, str]:
    """Environment for worker processes: the test database, the broker and
    queue, the fake model server, and short timeouts so failures show fast."""
    env = env_without("PYTEST_", "DJANGO_SETTINGS_MODULE")
    env.update(
        DJANGO_SETTINGS_MODULE="nexus.settings",
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY="integration-test-only",
        DATABASE_URL=database_url,
        CELERY_BROKER_URL=broker_url,
        CELERY_TASK_DEFAULT_QUEUE=queue,
        CELERY_VISIBILITY_TIMEOUT="60",
        INFERENCE_BACKEND="ollama",
        INFERENCE_SERVICE_URL=model_url,
        INFERENCE_TIMEOUT_SECONDS="2",
        INFERENCE_CONNECT_TIMEOUT_SECONDS="1",
        SUMMARY_LEASE_SECONDS="20",
        SUMMARY_MAX_RETRIES="3",
        SUMMARY_RETRY_BACKOFF_MAX="1",
        SUMMARY_RETRY_AFTER_SECONDS="0",
        LOG_LEVEL="INFO",
        PYTHONUNBUFFERED="1",
    )
    env.update(overrides)
    return env


@pytest.fixture
def worker_fleet(
    live_database: LiveDatabase, redis_url: str, tmp_path: Path
) -> Iterator[Callable[..., WorkerFleet]]:
    """A factory: ``worker_fleet(n, model_url=..., broker_url=None, **env)``
    starts ``n`` workers on a fresh queue and points this process at it."""
    fleets: list[WorkerFleet] = []
    stack = contextlib.ExitStack()

    def start(count: int, *, model_url: str, broker_url: str | None = None, **overrides: str) -> WorkerFleet:
        broker = broker_url or redis_url
        queue = f"nexus-test-{uuid.uuid4().hex[:10]}"
        env = worker_env(
            database_url=live_database.url, broker_url=broker, queue=queue, model_url=model_url, **overrides
        )
        fleet = WorkerFleet(broker_url=broker, queue=queue, env=env, log_dir=tmp_path)
        fleets.append(fleet)
        stack.enter_context(use_broker(broker, queue))
        return fleet.start(count)

    try:
        yield start
    finally:
        for fleet in fleets:
            fleet.stop()
        stack.close()
        # After this process let go of the broker too: nothing re-declares the queue.
        for fleet in fleets:
            fleet.forget_queue()

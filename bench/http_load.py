"""Helpers for the HTTP write benchmarks: their Django set-up and writer, a
gunicorn server of the bench settings on a free port, and a keep-alive load loop.

gunicorn runs with the project's own config (nexus/gunicorn.conf.py: gthread
workers, one process per core) against PostgreSQL and a Redis broker, with
access logs off and no process recycling so that neither skews a run.
"""

from __future__ import annotations

import http.client
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bench.support import setup_django
from tests.process_support import free_port, stop_process, wait_for

if TYPE_CHECKING:
    from sessions_app.models import ChatSession

ROOT = Path(__file__).resolve().parent.parent
BENCH_BROKER_URL = os.environ.get("BENCH_BROKER_URL", "redis://127.0.0.1:6379/5")
WRITE_BENCH_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/nexus_api_bench"


def setup_write_bench() -> None:
    """Django on the write settings (bench/write_settings.py) and the bench
    database (``BENCH_DATABASE_URL``, default ``nexus_api_bench``), migrated."""
    os.environ.setdefault("BENCH_DATABASE_URL", WRITE_BENCH_DATABASE_URL)
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.write_settings"
    setup_django(DJANGO_SECURE_SSL_REDIRECT="0", CELERY_BROKER_URL=BENCH_BROKER_URL, LOG_LEVEL="WARNING")


def bench_writer(*titles: str) -> tuple[dict[str, str], list[ChatSession]]:
    """New sessions of the benchmark user, one per title, and the
    ``Authorization`` header of that user's API token."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from rest_framework.authtoken.models import Token

    from sessions_app.services import session_create

    user, _ = get_user_model().objects.get_or_create(username="bench-writer")
    token, _ = Token.objects.get_or_create(user=user)
    sessions = [session_create(owner=user, title=title) for title in titles]
    connection.close()
    return {"Authorization": f"Token {token.key}"}, sessions


def server_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="bench.write_settings",
        DJANGO_SECRET_KEY=env.get("DJANGO_SECRET_KEY", "bench-only-secret-key"),
        DJANGO_DEBUG="0",
        DJANGO_SECURE_SSL_REDIRECT="0",
        DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost",
        CELERY_BROKER_URL=BENCH_BROKER_URL,
        LOG_LEVEL="WARNING",
        GUNICORN_MAX_REQUESTS="0",
        # Keep connections open across requests, as a pooled client would.
        DATABASE_CONN_MAX_AGE="600",
        API_THROTTLE_USER=env.get("API_THROTTLE_USER", "100000000/minute"),
    )
    env.update(extra)
    return env


@contextmanager
def gunicorn(**extra_env: str) -> Iterator[int]:
    """Run gunicorn on a free port; yields the port once it answers."""
    port = free_port()
    env = server_env(**extra_env)
    cmd = [
        str(ROOT / ".venv" / "bin" / "gunicorn"),
        "nexus.wsgi",
        "-c",
        str(ROOT / "nexus" / "gunicorn.conf.py"),
        "--bind",
        f"127.0.0.1:{port}",
        "--access-logfile",
        "/dev/null",
    ]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=sys.stderr)

    def answers() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"gunicorn exited with {proc.returncode}")
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("GET", "/healthz")
        conn.getresponse().read()
        conn.close()
        return True

    try:
        wait_for(answers, timeout=60, interval=0.2, message="gunicorn to answer", retry_on=(OSError,))
        yield port
    finally:
        stop_process(proc, timeout=20)


@dataclass
class LoadResult:
    requests: int
    seconds: float
    errors: int
    latencies_ms: list[float]  # of each answered request

    @property
    def rate(self) -> float:
        return self.requests / self.seconds

    @property
    def median_ms(self) -> float:
        return statistics.median(self.latencies_ms)


def run_load(
    port: int,
    path: str,
    body: bytes,
    *,
    headers: dict[str, str],
    seconds: float,
    concurrency: int,
    expect: int = 201,
) -> LoadResult:
    """POST ``body`` to ``path`` from ``concurrency`` keep-alive connections for ``seconds``."""
    done = [0] * concurrency
    errors = [0] * concurrency
    latencies: list[list[float]] = [[] for _ in range(concurrency)]
    stop = threading.Event()
    all_headers = {"Content-Type": "application/json", **headers}

    def worker(slot: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        while not stop.is_set():
            try:
                sent = time.perf_counter()
                conn.request("POST", path, body=body, headers=all_headers)
                response = conn.getresponse()
                payload = response.read()
                took = (time.perf_counter() - sent) * 1000
            except (OSError, http.client.HTTPException):
                errors[slot] += 1
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                continue
            if response.status == expect:
                done[slot] += 1
                latencies[slot].append(took)
            else:
                errors[slot] += 1
                if errors[slot] == 1:
                    print(f"unexpected {response.status} from {path}: {payload[:300]!r}", file=sys.stderr)
        conn.close()

    threads = [threading.Thread(target=worker, args=(n,), daemon=True) for n in range(concurrency)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    return LoadResult(
        requests=sum(done),
        seconds=elapsed,
        errors=sum(errors),
        latencies_ms=[ms for slot in latencies for ms in slot],
    )


def post_json(port: int, path: str, payload: object, headers: dict[str, str]) -> tuple[int, object]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("POST", path, body=json.dumps(payload), headers={"Content-Type": "application/json", **headers})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, json.loads(data) if data else None

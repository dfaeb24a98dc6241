"""The embedded default as ``bin/run`` serves it, in a real process on a
SQLite file of the test's own: under Django's runserver or gunicorn (the
Procfile's server), migrated, with the demo login, answering ``/healthz``."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.process_support import (
    env_without,
    free_port,
    gunicorn_server,
    run_python,
    start_logged,
    stop_process,
    wait_until,
)

PASSWORD = "nexus-demo"
SERVERS = ["runserver", "gunicorn"]


def embedded_env(tmp_path: Path) -> dict[str, str]:
    """The embedded default: only what ``bin/run`` sets, on a database of this test's own."""
    env = env_without("SUMMARY_", "DJANGO_", "CELERY_", "CONTEXT_", "INFERENCE_", "DATABASE_", "LOG_")
    env.update(DJANGO_DEBUG="1", DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}", NEXUS_ENV_FILE="")
    return env


@contextmanager
def embedded_server(kind: str, env: dict[str, str], log: Path) -> Iterator[str]:
    """Migrate, make the demo login, serve under ``kind`` (one of ``SERVERS``)
    and yield the base URL once ``/healthz`` answers; stop the server after."""
    for command in (("migrate", "--noinput"), ("ensure_demo_user",)):
        done = run_python("manage.py", *command, env=env)
        assert done.returncode == 0, done.stderr
    if kind == "gunicorn":
        with gunicorn_server(env, log, threads=2, ready_path="/healthz", timeout=60) as base:
            yield base
        return
    port = free_port()
    command = [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"]
    process = start_logged(command, log_path=log, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(
            lambda: httpx.get(f"{base}/healthz", timeout=2).status_code == 200,
            timeout=60,
            message="the server to answer",
            retry_on=(httpx.HTTPError,),
        )
        yield base
    finally:
        stop_process(process, group=True)

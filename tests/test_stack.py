"""The whole stack as real processes: web, worker and beat from the Procfile
(started by honcho, as ``bin/stack`` does) on a PostgreSQL database and a
redis-server of this test's own, with the fake model server as the inference
backend. A session driven past the summary threshold over HTTP gets its
summary from the worker; /healthz answers 200, then 503 naming the broker
once Redis stops.

Needs PostgreSQL (``DATABASE_URL``) and ``redis-server``; skipped without
them unless ``NEXUS_REQUIRE_SERVICES=1``.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import process_support
from tests.process_support import (
    VENV_BIN,
    env_without,
    free_port,
    require_or_skip,
    run_python,
    start_logged,
    stop_process,
    wait_until,
)

pytestmark = pytest.mark.integration

own_redis = process_support.own_redis  # fixture: a redis-server of this test's own

ROOT = Path(__file__).resolve().parent.parent


def _wait(what: str, probe: Callable[[], Any], *, timeout: float, interval: float = 0.25) -> Any:
    """Poll ``probe`` until it returns something truthy; errors count as "not
    yet" (a process still starting refuses connections)."""
    return wait_until(probe, timeout=timeout, interval=interval, message=what, retry_on=(Exception,))


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A database of this test's own, created and dropped here."""
    import dj_database_url
    import psycopg
    from psycopg import sql

    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        require_or_skip("DATABASE_URL does not point at PostgreSQL")
    cfg = dj_database_url.parse(url)
    admin = {
        "host": cfg["HOST"] or None,
        "port": cfg["PORT"] or None,
        "user": cfg["USER"] or None,
        "password": cfg["PASSWORD"] or None,
        "dbname": "postgres",
        "autocommit": True,
        "connect_timeout": 5,
    }
    name = f"nexus_stack_test_{os.getpid()}"
    try:
        conn = psycopg.connect(**admin)
    except psycopg.OperationalError as exc:
        require_or_skip(f"PostgreSQL is not reachable: {exc}")
    with conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    base = url.rsplit("/", 1)[0]
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(**admin) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def _stack_env(
    database_url: str, broker_url: str, model_url: str, port: int, tmp_path: Path
) -> dict[str, str]:
    env = env_without("DJANGO_", "SUMMARY_", "CELERY_", "INFERENCE_", "LOG_", "GUNICORN_", "WEB_")
    env.update(
        PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
        DJANGO_SETTINGS_MODULE="nexus.settings",
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost",
        # Plain http on loopback, as bin/stack runs it.
        DJANGO_SECURE_SSL_REDIRECT="0",
        DJANGO_SECURE_HSTS_SECONDS="0",
        DJANGO_SESSION_COOKIE_SECURE="0",
        DJANGO_CSRF_COOKIE_SECURE="0",
        DATABASE_URL=database_url,
        CELERY_BROKER_URL=broker_url,
        CELERY_BEAT_SCHEDULE_FILE=str(tmp_path / "celerybeat-schedule"),
        INFERENCE_BACKEND="ollama",
        INFERENCE_SERVICE_URL=model_url,
        INFERENCE_CONNECT_TIMEOUT_SECONDS="1",
        LOG_FORMAT="json",
        PORT=str(port),
        GUNICORN_BIND=f"127.0.0.1:{port}",
        WEB_CONCURRENCY="1",
        # The Procfile's MCP server: a port of its own, on loopback.
        MCP_HOST="127.0.0.1",
        MCP_PORT=str(free_port()),
        PYTHONUNBUFFERED="1",
    )
    return env


def _manage(env: dict[str, str], *args: str) -> str:
    result = run_python("manage.py", *args, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def _json_records(log: Path, process: str) -> list[dict[str, Any]]:
    """JSON log records a process wrote (honcho prefixes lines with ``time name.1 | ``)."""
    records = []
    for line in log.read_text(errors="replace").splitlines():
        prefix, sep, rest = line.partition(" | ")
        if sep and prefix.split()[-1].startswith(f"{process}.") and rest.startswith("{"):
            try:
                records.append(json.loads(rest))
            except json.JSONDecodeError:
                pass
    return records


def test_procfile_stack_summarizes_and_reports_health(tmp_path, postgres_url, own_redis, fake_model_process):
    import httpx

    port = free_port()
    env = _stack_env(postgres_url, own_redis.url, fake_model_process.url, port, tmp_path)
    _manage(env, "migrate", "--noinput")
    _manage(
        env,
        "shell",
        "-c",
        "from django.contrib.auth import get_user_model; "
        "get_user_model().objects.create_user('stacker', password='stack-pass-123')",
    )

    log = tmp_path / "stack.log"
    stack = start_logged(
        [str(VENV_BIN / "honcho"), "start", "--no-colour", "--procfile", "Procfile"],
        log_path=log,
        env=env,
        cwd=ROOT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base, timeout=10) as http:

            def healthy() -> bool:
                return http.get("/healthz").status_code == 200

            _wait("web answers /healthz with 200", healthy, timeout=45)
            _wait(
                "worker and beat are up",
                lambda: "celery@" in log.read_text() and "beat: Starting" in log.read_text(),
                timeout=30,
            )

            token = http.post("/api/auth/token/", json={"username": "stacker", "password": "stack-pass-123"})
            assert token.status_code == 200, token.text
            http.headers["Authorization"] = f"Token {token.json()['token']}"

            created = http.post("/api/sessions/", json={"title": "stack test"})
            assert created.status_code == 201, created.text
            session = created.json()["id"]
            for i in range(6):  # about 60 tokens each: past 200 tokens and 5 episodes
                episode = http.post(
                    f"/api/sessions/{session}/episodes/",
                    json={
                        "user_input": f"Question {i}: how should the garden beds be laid out "
                        "for spring planting?",
                        "response": f"Answer {i}: put tall plants to the north, keep paths narrow, "
                        "rotate beans and tomatoes, and mulch once the soil has warmed up a little.",
                    },
                )
                assert episode.status_code == 201, episode.text

            def summaries() -> list[dict]:
                response = http.get(f"/api/sessions/{session}/summaries/")
                assert response.status_code == 200, response.text
                body = response.json()
                return body["results"] if isinstance(body, dict) else body

            rows = _wait("the worker stores a summary", summaries, timeout=45, interval=0.5)
            assert rows[0]["content"].startswith("Summary of ")  # the fake model's answer
            assert any(r["path"] == "/api/chat" for r in fake_model_process.requests)

            health = http.get("/healthz")
            assert health.status_code == 200, health.text
            assert health.json()["checks"]["broker"]["transport"] == "redis"

            attempts = _wait(
                "the worker logs the summarization attempt as a JSON line",
                lambda: [r for r in _json_records(log, "worker") if r["logger"] == "nexus.summarization"],
                timeout=10,
            )
            assert {
                "session",
                "episode_range",
                "prompt_tokens",
                "completion_tokens",
                "duration_ms",
                "outcome",
            } <= set(attempts[0])

            own_redis.stop()
            down = http.get("/healthz")
            assert down.status_code == 503, down.text
            assert "broker" in down.json()["failed"]
            assert down.json()["checks"]["database"]["ok"] is True
    finally:
        stop_process(stack, group=True)
        # Shown by pytest only when the test fails.
        print(log.read_text(errors="replace")[-12000:])

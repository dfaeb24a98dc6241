"""The embedded default as a newcomer runs it: a real server process on
SQLite with no broker, its background work on the embedded worker. A client
that keeps its connection open (httpx, requests and the openai SDK all do)
posts 300 episodes; its next request on the same connection answers at once
while the summaries and vectors are still being made, and the worker makes
them. Run under runserver (``bin/run``) and gunicorn."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.process_support import free_port, run_python, start_logged, stop_process, wait_until

VENV_BIN = Path(sys.executable).parent
PASSWORD = "nexus-demo"


def embedded_env(tmp_path: Path) -> dict[str, str]:
    """The embedded default: only what ``bin/run`` sets, on a database of this test's own."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SUMMARY_", "DJANGO_", "CELERY_", "CONTEXT_", "INFERENCE_", "DATABASE_"))
    }
    env.update(
        DJANGO_DEBUG="1",
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        NEXUS_ENV_FILE="",
    )
    return env


@pytest.fixture(params=["runserver", "gunicorn"])
def server(request, tmp_path) -> Iterator[str]:
    env = embedded_env(tmp_path)
    migrated = run_python("manage.py", "migrate", "--noinput", env=env)
    assert migrated.returncode == 0, migrated.stderr
    demo = run_python("manage.py", "ensure_demo_user", env=env)
    assert demo.returncode == 0, demo.stderr
    port = free_port()
    if request.param == "runserver":
        command = [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"]
    else:
        env.update(GUNICORN_BIND=f"127.0.0.1:{port}", WEB_CONCURRENCY="1", GUNICORN_THREADS="2")
        command = [str(VENV_BIN / "gunicorn"), "nexus.wsgi", "--config", "nexus/gunicorn.conf.py"]
    process = start_logged(command, log_path=tmp_path / "server.log", env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(
            lambda: httpx.get(f"{base}/healthz", timeout=2).status_code == 200,
            timeout=60,
            message="the server to answer",
            retry_on=(httpx.HTTPError,),
        )
        health = httpx.get(f"{base}/healthz", timeout=5).json()
        assert health["checks"]["broker"]["mode"] == "in-process"
        assert health["checks"]["broker"]["worker"] == "running"
        yield base
    finally:
        stop_process(process, group=True)


def test_a_keep_alive_client_never_waits_for_background_work(server):
    with httpx.Client(base_url=server, timeout=60) as client:
        token = client.post("/api/auth/token/", json={"username": "demo", "password": PASSWORD}).json()["token"]
        client.headers["Authorization"] = f"Token {token}"
        uuid = client.post("/api/sessions/", json={"title": "Bulk"}).json()["id"]
        items = [
            {"user_input": f"Question {n}: what grows best in a shady garden bed?", "response": "Ferns and hostas. " * 20}
            for n in range(300)
        ]
        written = client.post(f"/api/sessions/{uuid}/episodes/", json=items)
        assert written.status_code == 201

        started = time.monotonic()
        status = client.get(f"/api/sessions/{uuid}/summary-status/")
        waited = time.monotonic() - started

        assert status.status_code == 200
        body = status.json()
        # Asked while the work is still to do, and answered without waiting for it.
        assert body["pending_episodes"] > 0 or body["state"] in {"queued", "running"}, body
        assert waited < 1.0, f"the next request on the connection waited {waited:.2f}s"

        # The worker does the work: the whole range ends up summarized.
        def summarized() -> bool:
            now = client.get(f"/api/sessions/{uuid}/summary-status/").json()
            return now["state"] == "idle" and now["pending_episodes"] == 0

        wait_until(summarized, timeout=240, interval=1, message="the embedded worker to summarize")
        chain = client.get(f"/api/sessions/{uuid}/summaries/").json()
        rows = chain["results"] if isinstance(chain, dict) else chain
        assert rows and rows[-1]["last_episode_id"] >= rows[0]["first_episode_id"]

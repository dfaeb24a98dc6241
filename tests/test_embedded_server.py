"""The embedded default as a newcomer runs it: a real server process on
SQLite with no broker, its background work on the embedded worker. A client
that keeps its connection open (httpx, requests and the openai SDK all do)
posts 300 episodes; its next request on the same connection answers at once
while the summaries and vectors are still being made, and the worker makes
them. Run under runserver (``bin/run``) and gunicorn."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from tests.embedded_servers import PASSWORD, SERVERS, embedded_env, embedded_server
from tests.process_support import wait_until


@pytest.fixture(params=SERVERS)
def server(request, tmp_path) -> Iterator[str]:
    with embedded_server(request.param, embedded_env(tmp_path), tmp_path / "server.log") as base:
        health = httpx.get(f"{base}/healthz", timeout=5).json()
        assert health["checks"]["broker"]["mode"] == "in-process"
        assert health["checks"]["broker"]["worker"] == "running"
        yield base


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

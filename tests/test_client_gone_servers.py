"""A chat turn whose client hung up before the answer stores nothing, under
the servers Nexus runs on: Django's own (``bin/run``) and gunicorn (the
Procfile). Each is a real process on a SQLite file, its chat model the fake
model server, slower than the client is patient."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.embedded_servers import PASSWORD, SERVERS, embedded_env, embedded_server
from tests.fake_model_server import FakeModelServer
from tests.process_support import wait_until


@pytest.fixture(params=SERVERS)
def chat_server(request, tmp_path) -> Iterator[tuple[str, Path, FakeModelServer]]:
    with FakeModelServer() as model:
        env = embedded_env(tmp_path)
        env.update(INFERENCE_BACKEND="ollama", INFERENCE_SERVICE_URL=model.url, CHAT_MODEL="fake-chat")
        log = tmp_path / "server.log"
        with embedded_server(request.param, env, log) as base:
            yield base, log, model


def test_a_client_that_hung_up_before_the_answer_leaves_nothing_stored(chat_server):
    base, log, model = chat_server
    with httpx.Client(base_url=base, timeout=30) as client:
        token = client.post("/api/auth/token/", json={"username": "demo", "password": PASSWORD}).json()["token"]
        client.headers["Authorization"] = f"Token {token}"
        uuid = client.post("/api/sessions/", json={"title": "Impatient"}).json()["id"]
    model.set_mode("ok", latency=2.0)
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(
            f"{base}/api/sessions/{uuid}/chat/",
            json={"message": "Are you still there?"},
            headers={"Authorization": f"Token {token}"},
            timeout=httpx.Timeout(30, read=0.5),
        )
    wait_until(
        lambda: "chat turn" in log.read_text(),
        timeout=30,
        message="the server to end the turn",
    )
    assert "chat turn client_gone, nothing stored" in log.read_text()
    episodes = httpx.get(
        f"{base}/api/sessions/{uuid}/episodes/", headers={"Authorization": f"Token {token}"}, timeout=10
    ).json()
    assert episodes["results"] == []
    assert sum(1 for r in model.requests if r["path"] == "/api/chat") == 1

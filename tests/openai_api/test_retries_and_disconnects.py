"""One turn, one episode, however the client retries or disconnects: the
``openai`` SDK's own retries with an ``Idempotency-Key`` make one model call
and one episode; a client that gave up before the answer (a plain reply, or
a stream cut short) leaves nothing stored."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from urllib.parse import urlsplit

import openai
import pytest
from django.core.signals import request_finished
from rest_framework.authtoken.models import Token

from sessions_app.models import Episode, IdempotencyKey
from tests.factories import ChatSessionFactory
from tests.fake_model_server import reply_text

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "What is the capital of France?"


class KeyedOpenAI(openai.OpenAI):
    """The SDK with its own idempotency keys switched on: it makes one key
    per call and sends the same one on each of its retries."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._idempotency_header = "Idempotency-Key"


@pytest.fixture
def token(owner) -> str:
    return Token.objects.create(user=owner).key


@pytest.fixture
def finished() -> Iterator[threading.Event]:
    """Set when the live server has finished a request (its answer sent, or its client gone)."""
    done = threading.Event()

    def receiver(**kwargs) -> None:
        done.set()

    request_finished.connect(receiver, dispatch_uid="test-request-finished")
    yield done
    request_finished.disconnect(dispatch_uid="test-request-finished")


def model_calls(server) -> int:
    return sum(1 for r in server.requests if r["path"] in ("/api/chat", "/v1/chat/completions"))


@pytest.mark.parametrize("sdk", [KeyedOpenAI, openai.OpenAI])
def test_one_sdk_call_with_retries_makes_one_model_call_and_one_episode(
    live_server, owner, token, model, sdk
):
    # The model takes longer than the client waits: the SDK times out and
    # retries, while the first request is still being answered.
    model.set_mode("ok", latency=1.5)
    session = ChatSessionFactory(owner=owner)
    client = sdk(base_url=f"{live_server.url}/v1", api_key=token, max_retries=6, timeout=0.5)
    headers = {"X-Nexus-Session": str(session.uuid)}
    if sdk is openai.OpenAI:
        headers["Idempotency-Key"] = "one-question"  # the SDK sends it unchanged on every retry
    raw = client.chat.completions.with_raw_response.create(
        model="fake-chat", messages=[{"role": "user", "content": QUESTION}], extra_headers=headers
    )
    assert raw.headers["Idempotent-Replayed"] == "true"  # the SDK did retry, and got the first answer
    assert raw.headers["X-Nexus-Session"] == str(session.uuid)
    assert raw.parse().choices[0].message.content == reply_text(QUESTION)
    assert model_calls(model) == 1
    assert Episode.objects.filter(session=session).count() == 1
    assert IdempotencyKey.objects.get().state == IdempotencyKey.State.DONE


def test_sdk_call_that_gave_up_stores_nothing(live_server, owner, token, model, finished):
    model.set_mode("ok", latency=1.5)
    session = ChatSessionFactory(owner=owner)
    client = openai.OpenAI(base_url=f"{live_server.url}/v1", api_key=token, max_retries=0, timeout=0.5)
    with pytest.raises(openai.APITimeoutError):
        client.chat.completions.create(
            model="fake-chat",
            messages=[{"role": "user", "content": QUESTION}],
            extra_headers={"X-Nexus-Session": str(session.uuid)},
        )
    assert finished.wait(20), "the server never finished the request"
    assert model_calls(model) == 1
    assert not Episode.objects.filter(session=session).exists()


def test_api_chat_client_that_gave_up_stores_nothing(live_server, owner, token, model, finished):
    model.set_mode("ok", latency=1.5)
    session = ChatSessionFactory(owner=owner)
    sock = send_chat(live_server.url, token, session, accept="application/json")
    sock.settimeout(0.5)
    with pytest.raises(TimeoutError):
        sock.recv(1)  # the client waits half a second for the answer, then hangs up
    sock.close()
    assert finished.wait(20), "the server never finished the request"
    assert not Episode.objects.filter(session=session).exists()


@pytest.mark.parametrize(("path", "events_before_leaving"), [("api", 4), ("v1", 5)])
def test_stream_whose_client_left_before_the_end_stores_nothing(
    live_server, owner, token, model, finished, path, events_before_leaving
):
    # Five chunks of text, 0.3 s apart; the client leaves after the fourth,
    # so the last chunk and the store come after it has gone.
    model.set_mode("trickle", trickle_seconds=0.3)
    session = ChatSessionFactory(owner=owner)
    if path == "api":
        sock = send_chat(live_server.url, token, session, accept="text/event-stream")
    else:
        sock = send_v1_stream(live_server.url, token, session)
    received = b""
    while received.count(b"data: ") < events_before_leaving:
        chunk = sock.recv(4096)
        assert chunk, received
        received += chunk
    sock.close()
    assert finished.wait(20), "the server never finished the request"
    assert not Episode.objects.filter(session=session).exists()


# --- a client that can hang up at a moment of its choosing ------------------------------


def _request(url: str, target: str, headers: dict[str, str], body: dict) -> socket.socket:
    parts = urlsplit(url)
    payload = json.dumps(body).encode()
    head = [f"POST {target} HTTP/1.1", f"Host: {parts.netloc}", f"Content-Length: {len(payload)}"]
    head += [f"{name}: {value}" for name, value in headers.items()]
    sock = socket.create_connection((parts.hostname, parts.port), timeout=20)
    sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + payload)
    return sock


def send_chat(url: str, token: str, session, *, accept: str) -> socket.socket:
    return _request(
        url,
        f"/api/sessions/{session.uuid}/chat/",
        {"Authorization": f"Token {token}", "Content-Type": "application/json", "Accept": accept},
        {"message": QUESTION},
    )


def send_v1_stream(url: str, token: str, session) -> socket.socket:
    return _request(
        url,
        "/v1/chat/completions",
        {
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "X-Nexus-Session": str(session.uuid),
        },
        {"model": "fake-chat", "messages": [{"role": "user", "content": QUESTION}], "stream": True},
    )

"""The MCP tools and the HTTP key check in this process, where a failure can
be injected: ``remember`` is one transaction, and refused keys count against
the anonymous throttle as on the REST API."""

from __future__ import annotations

import anyio
import httpx
import pytest

from nexus.api.keys.services import key_create
from sessions_app.models import ChatSession, Episode
from summaries.mcp import memory_tools
from summaries.mcp.server import REFUSED, RequireApiKey

pytestmark = pytest.mark.django_db(transaction=True)


def test_remember_in_a_new_session_is_one_transaction(owner, monkeypatch):
    def fail(**kwargs):
        raise RuntimeError("the episode write failed")

    monkeypatch.setattr(memory_tools, "episode_create_for_user", fail)
    with pytest.raises(RuntimeError):
        memory_tools.remember.__wrapped__(owner, user_input="Hi", response="Hello", title="Half")
    assert not ChatSession.objects.filter(owner=owner).exists()


def test_remember_writes_the_session_and_its_exchange(owner):
    answer = memory_tools.remember.__wrapped__(owner, user_input="Hi", response="Hello", title="Whole")
    session = ChatSession.objects.get(owner=owner)
    assert (answer["session"], session.title) == (str(session.uuid), "Whole")
    assert list(Episode.objects.filter(session=session).values_list("user_input", "response")) == [
        ("Hi", "Hello")
    ]


async def inner(scope, receive, send) -> None:
    """Stands for the MCP transport: what a request with a working key reaches."""
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"reached"})


def statuses(headers: dict[str, str], count: int) -> list[httpx.Response]:
    async def send_all() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=RequireApiKey(inner), client=("203.0.113.7", 4000))
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            return [await client.post("/mcp", json={}, headers=headers) for _ in range(count)]

    return anyio.run(send_all)


def test_refused_keys_count_against_the_anonymous_rate(owner, settings):
    settings.API_THROTTLE_ANON = "2/day"
    answers = statuses({"Authorization": "Bearer nxk_not-a-key"}, 3)
    assert [a.status_code for a in answers] == [401, 401, 429]
    assert answers[0].json()["error"] == {"code": REFUSED, "message": "Invalid API key."}
    refused = answers[2]
    message = refused.json()["error"]["message"]
    assert message.startswith(
        "Too many requests with a refused key from this address: 2/day (API_THROTTLE_ANON); try again in "
    )
    assert 0 < int(refused.headers["Retry-After"]) <= 24 * 3600
    # A working key is not refused for the address's failures, and reaches the transport.
    _, secret = key_create(user=owner, name="agent")
    working = statuses({"Authorization": f"Bearer {secret}"}, 1)[0]
    assert (working.status_code, working.text) == (200, "reached")

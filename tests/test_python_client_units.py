"""The Python client (``clients/python``) against a stand-in transport
(``httpx.MockTransport``): which requests its adapters send, and that each
closes the clients it made and only those."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import httpx
import pytest

nexus_memory = pytest.importorskip("nexus_memory")
agents = pytest.importorskip("nexus_memory.agents")

ITEM = {"role": "assistant", "content": "Sunny."}


class Recorder:
    """A stand-in server: records each request; answers a pop with ``ITEM``, a session with an id."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.sent.append((request.method, request.url.path))
        if request.url.path.endswith("/items/newest/"):
            return httpx.Response(200, json={"item": ITEM})
        if request.url.path == "/api/sessions/":
            return httpx.Response(201, json={"id": "s-1"})
        if request.method == "DELETE":
            return httpx.Response(200, json={"deleted": 0})
        return httpx.Response(200, json={"next": None, "results": []})

    def async_client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self))


def owning(http_client: Callable[[], httpx.AsyncClient], made: list) -> type:
    """An ``AsyncNexusClient`` class whose instances talk through a new
    ``http_client()`` as a client that made its own would (closing it is
    theirs), each recorded in ``made``."""

    class Owning(nexus_memory.AsyncNexusClient):
        def __init__(self, **kwargs):
            super().__init__(**kwargs, http_client=http_client())
            self._owns_http = True
            made.append(self)

    return Owning


def test_pop_item_is_one_request_answered_by_what_the_server_took_off():
    server = Recorder()

    async def run():
        async with nexus_memory.AsyncNexusClient(http_client=server.async_client()) as nexus:
            return await agents.NexusSession("s-1", client=nexus).pop_item()

    assert asyncio.run(run()) == ITEM
    # No read before it and no write after it: nothing to race with another writer.
    assert server.sent == [("DELETE", "/api/sessions/s-1/items/newest/")]


def test_the_async_client_closes_what_it_made_and_leaves_what_it_was_given():
    given = Recorder().async_client()

    async def run():
        async with nexus_memory.AsyncNexusClient() as made:
            pass
        async with nexus_memory.AsyncNexusClient(http_client=given):
            pass
        return made

    made = asyncio.run(run())
    assert made._http.is_closed and not given.is_closed
    asyncio.run(given.aclose())


def test_a_session_closes_the_client_it_made_and_only_that(monkeypatch):
    server = Recorder()
    made: list = []

    monkeypatch.setattr(agents, "AsyncNexusClient", owning(server.async_client, made))

    async def run():
        async with await agents.NexusSession.create(title="t", base_url="http://nexus") as session:
            assert session.session_id == "s-1"
        shared = nexus_memory.AsyncNexusClient(http_client=server.async_client())
        shared._owns_http = True
        async with agents.NexusSession("s-1", client=shared):
            pass
        return shared

    shared = asyncio.run(run())
    assert len(made) == 1 and made[0]._http.is_closed
    assert not shared._http.is_closed  # given, so left to whoever made it
    asyncio.run(shared.aclose())


def test_create_closes_its_client_when_the_session_cannot_be_made(monkeypatch):
    made: list = []

    refuse = lambda request: httpx.Response(401, json={"detail": "Invalid API key."})
    refusing = lambda: httpx.AsyncClient(transport=httpx.MockTransport(refuse))
    monkeypatch.setattr(agents, "AsyncNexusClient", owning(refusing, made))
    with pytest.raises(nexus_memory.AuthenticationError):
        asyncio.run(agents.NexusSession.create(base_url="http://nexus", api_key="nxk_bad"))
    assert len(made) == 1 and made[0]._http.is_closed


def test_langchain_history_async_calls_close_their_own_clients(monkeypatch):
    langchain = pytest.importorskip("nexus_memory.langchain")
    from langchain_core.messages import HumanMessage

    server = Recorder()
    made: list = []

    monkeypatch.setattr(langchain, "AsyncNexusClient", owning(server.async_client, made))
    history = langchain.NexusChatMessageHistory("s-1", base_url="http://nexus", api_key="k")

    async def run():
        await history.aadd_messages([HumanMessage("Hi")])
        await history.aget_messages()
        await history.aclear()

    asyncio.run(run())
    assert len(made) == 3 and all(client._http.is_closed for client in made)
    assert [method for method, _ in server.sent] == ["POST", "GET", "DELETE"]
    history.close()
    assert history.client._http.is_closed

"""The Python client (``clients/python``, installed as ``nexus-memory``)
against a live server (gunicorn on the embedded default, SQLite), through
the real packages: ``httpx`` for the client itself, ``langchain-core`` for
the chat history and the context as a retriever, ``openai-agents`` for an
agent run whose turns are stored through the session adapter, its model the
fake model server."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest

from tests.embedded_servers import PASSWORD, embedded_env, embedded_server
from tests.fake_model_server import FakeModelServer

nexus_memory = pytest.importorskip("nexus_memory")


@pytest.fixture(scope="module")
def live(tmp_path_factory) -> Iterator[tuple[str, str]]:
    """A gunicorn server on its own SQLite file; its base URL and the demo user's token."""
    tmp = tmp_path_factory.mktemp("client")
    with embedded_server("gunicorn", embedded_env(tmp), tmp / "server.log") as base:
        token = httpx.post(f"{base}/api/auth/token/", json={"username": "demo", "password": PASSWORD}).json()
        yield base, token["token"]


@pytest.fixture
def client(live):
    base, key = live
    with nexus_memory.NexusClient(base_url=base, api_key=key) as nexus:
        yield nexus


def test_sessions_exchanges_context_and_search(client):
    session = client.create_session(title="Garden")["id"]
    stored = client.add_episode(session, "My tomato variety is Sungold.", "Noted, Sungold.")
    waiting = client.add_episode(session, "Which variety did I plant?")
    assert waiting["response"] == ""
    filled = client.fill_reply(session, waiting["id"], "Sungold.")
    assert filled["response"] == "Sungold."
    with pytest.raises(nexus_memory.ConflictError) as conflict:
        client.fill_reply(session, waiting["id"], "Again.")
    assert conflict.value.field == "response"
    assert [e["id"] for e in client.newest_episodes(session, 1)] == [waiting["id"]]
    assert "Sungold" in client.get_context(session, "What tomato did I plant?")["prompt"]
    hits = client.search("Sungold", session_id=session)
    assert stored["id"] in {hit["episode"]["id"] for hit in hits}
    client.delete_episode(session, stored["id"])
    with pytest.raises(nexus_memory.NotFoundError):
        client.get_episode(session, stored["id"])
    assert client.clear_episodes(session) == 1
    assert client.list_episodes(session) == []
    assert client.get_session(session)["episode_count"] == 0


def test_errors_are_typed(live, client):
    base, _ = live
    with pytest.raises(nexus_memory.AuthenticationError):
        nexus_memory.NexusClient(base_url=base, api_key="not-a-key").list_sessions()
    with pytest.raises(nexus_memory.NotFoundError):
        client.get_session("00000000-0000-0000-0000-000000000000")
    session = client.create_session()["id"]
    with pytest.raises(nexus_memory.ValidationError) as bad:
        client.add_episode(session, "")
    assert "user_input" in bad.value.fields
    with pytest.raises(nexus_memory.NexusConnectionError):
        nexus_memory.NexusClient(base_url="http://127.0.0.1:9", api_key="x").list_sessions()


def test_the_async_client(live):
    base, key = live

    async def run() -> list[dict]:
        async with nexus_memory.AsyncNexusClient(base_url=base, api_key=key) as nexus:
            session = (await nexus.create_session(title="Async"))["id"]
            await nexus.add_messages(session, [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}])
            return await nexus.list_episodes(session)

    episodes = asyncio.run(run())
    assert [(e["user_input"], e["response"]) for e in episodes] == [("Hi", "Hello")]


def test_langchain_history_round_trip_and_context_retriever(live, client):
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    from nexus_memory.langchain import NexusChatMessageHistory, NexusContextRetriever

    base, key = live
    session = client.create_session(title="LangChain")["id"]
    history = NexusChatMessageHistory(session_id=session, base_url=base, api_key=key)
    sent = [
        SystemMessage("Be brief."),
        HumanMessage("My sister Ilse lives in Graz."),
        AIMessage("Noted: Ilse, Graz."),
        HumanMessage("And my dog is Pepper."),
    ]
    history.add_messages(sent)
    history.add_messages([AIMessage("Pepper, noted.")])  # the reply to the waiting message
    got = history.messages
    assert [(type(m), m.content) for m in got] == [(type(m), m.content) for m in [*sent, AIMessage("Pepper, noted.")]]
    assert len(client.list_episodes(session)) == 2

    async def async_twins() -> tuple[int, int]:
        await history.aadd_messages([HumanMessage("One more."), AIMessage("Sure.")])
        before = len(await history.aget_messages())
        await history.aclear()
        return before, len(await history.aget_messages())

    assert asyncio.run(async_twins()) == (7, 0)

    history.add_messages([HumanMessage("My sister Ilse lives in Graz."), AIMessage("Noted.")])
    retriever = NexusContextRetriever(session_id=session, base_url=base, api_key=key, budget=500)
    (document,) = retriever.invoke("Where does Ilse live?")
    assert "Graz" in document.page_content
    assert document.metadata["session_id"] == session
    (again,) = asyncio.run(retriever.ainvoke("Where does Ilse live?"))
    assert "Graz" in again.page_content
    history.close()
    retriever.close()
    assert history.client._http.is_closed and retriever._client._http.is_closed


def test_an_agent_run_stores_its_turns_through_the_session(live, client):
    from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
    from openai import AsyncOpenAI

    from nexus_memory.agents import NexusSession

    set_tracing_disabled(True)
    base, key = live
    with FakeModelServer() as model:
        chat = OpenAIChatCompletionsModel(
            model="fake-chat", openai_client=AsyncOpenAI(base_url=f"{model.url}/v1", api_key="unused")
        )
        agent = Agent(name="Assistant", instructions="Answer briefly.", model=chat)

        async def run() -> tuple:
            async with await NexusSession.create(title="Agent", base_url=base, api_key=key) as session:
                first = (await Runner.run(agent, "My bike is a blue Gazelle.", session=session)).final_output
                second = (await Runner.run(agent, "What colour is my bike?", session=session)).final_output
                items = await session.get_items()
                episodes = client.list_episodes(session.session_id)
                popped = await session.pop_item()
                after_pop = await session.get_items(limit=2)
                await session.clear_session()
                return first, second, items, episodes, popped, after_pop, await session.get_items(), session

        first, second, items, episodes, popped, after_pop, cleared, session = asyncio.run(run())
        # The second turn's model call got the first turn back from Nexus.
        sent = [r["body"] for r in model.requests if r["path"] == "/v1/chat/completions"]
        assert len(sent) == 2 and "blue Gazelle" in str(sent[1]["messages"])

    assert [(i["role"], i["content"]) for i in items] == [
        ("user", "My bike is a blue Gazelle."), ("assistant", first),
        ("user", "What colour is my bike?"), ("assistant", second),
    ]  # fmt: skip
    assert [(e["user_input"], e["response"]) for e in episodes] == [
        ("My bike is a blue Gazelle.", first), ("What colour is my bike?", second)
    ]  # fmt: skip
    assert popped == {"role": "assistant", "content": second}
    assert [i["content"] for i in after_pop] == [first, "What colour is my bike?"]
    assert cleared == []
    assert session.client._http.is_closed  # the client it made is closed with it


def test_popped_items_come_off_newest_first_and_the_rest_stays(live):
    from nexus_memory.agents import NexusSession

    base, key = live
    items = [
        {"role": "user", "content": "Weather in Graz?"},
        {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
        {"role": "assistant", "content": "Sunny."},
    ]

    async def run() -> tuple:
        async with await NexusSession.create(title="Pop", base_url=base, api_key=key) as session:
            await session.add_items([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}])
            await session.add_items(items)
            popped = [await session.pop_item(), await session.pop_item()]
            return popped, await session.get_items()

    popped, left = asyncio.run(run())
    assert popped == items[:1:-1]
    assert left == [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}, *items[:2]]

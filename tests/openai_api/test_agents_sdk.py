"""The OpenAI Agents SDK's ``Runner`` on its default model, against Nexus's
``/v1/responses`` (a live server, the fake model server behind it)."""

from __future__ import annotations

import asyncio

import pytest
from agents import (
    Agent,
    ModelSettings,
    Runner,
    set_default_openai_api,
    set_default_openai_client,
    set_tracing_disabled,
)
from agents.models.default_models import get_default_model
from openai import AsyncOpenAI
from rest_framework.authtoken.models import Token

from sessions_app.models import Episode
from tests.factories import ChatSessionFactory
from tests.fake_model_server import reply_text
from tests.openai_api.conftest import chat_requests

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def agents_on_nexus(live_server, owner, model, settings):
    """The SDK pointed at Nexus, as the README says, with every model name mapped to the chat model."""
    settings.OPENAI_MODEL_ALIASES = {"*": "fake-chat"}
    set_tracing_disabled(True)  # traces would go to OpenAI with this key
    key = Token.objects.create(user=owner).key
    set_default_openai_client(AsyncOpenAI(base_url=f"{live_server.url}/v1", api_key=key, max_retries=0))
    set_default_openai_api("responses")
    return model


def test_runner_on_the_default_model_stores_its_turn(agents_on_nexus):
    agent = Agent(name="Helper", instructions="You answer briefly.")
    result = asyncio.run(Runner.run(agent, "Which planet has the most moons?"))
    assert result.final_output == reply_text("Which planet has the most moons?")
    received = [r for r in agents_on_nexus.requests if r["path"] == "/api/chat"]
    assert len(received) == 1
    sent = chat_requests(agents_on_nexus, "Which planet has the most moons?")[-1]
    assert sent["model"] == "fake-chat"
    assert sent["messages"][0] == {"role": "system", "content": "You answer briefly."}
    assert sent["messages"][-1] == {"role": "user", "content": "Which planet has the most moons?"}
    episode = Episode.objects.get()
    assert (episode.user_input, episode.response) == ("Which planet has the most moons?", result.final_output)
    assert get_default_model().startswith("gpt-")  # the name it sent, mapped by OPENAI_MODEL_ALIASES


def test_streamed_runner_and_a_follow_up_by_previous_response_id(agents_on_nexus):
    agent = Agent(name="Helper", instructions="You answer briefly.")

    async def run() -> tuple[str, str]:
        first = Runner.run_streamed(agent, "My favourite tree is the rowan.")
        async for _ in first.stream_events():
            pass
        second = await Runner.run(
            agent, "What is my favourite tree?", previous_response_id=first.last_response_id
        )
        return first.final_output, second.final_output

    first, second = asyncio.run(run())
    assert first == reply_text("My favourite tree is the rowan.")
    assert second == reply_text("What is my favourite tree?")
    memory = chat_requests(agents_on_nexus, "What is my favourite tree?")[-1]["messages"][-2]["content"]
    assert "rowan" in memory
    assert Episode.objects.values("session").distinct().count() == 1
    assert Episode.objects.count() == 2


def test_runs_named_to_one_session_share_its_memory(agents_on_nexus, owner):
    session = ChatSessionFactory(owner=owner)
    settings = ModelSettings(metadata={"nexus_session": str(session.uuid)})
    agent = Agent(name="Helper", instructions="You answer briefly.", model_settings=settings)

    async def run() -> None:  # one event loop: the client's connections belong to it
        await Runner.run(agent, "My bicycle is dark green.")
        await Runner.run(agent, "What colour is my bicycle?")

    asyncio.run(run())
    memory = chat_requests(agents_on_nexus, "What colour is my bicycle?")[-1]["messages"][-2]["content"]
    assert "dark green" in memory
    assert Episode.objects.filter(session=session).count() == 2

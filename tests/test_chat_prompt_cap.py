"""A chat turn's prompt never exceeds its budget nor ``CHAT_MAX_PROMPT_TOKENS``,
on the chat endpoint and the OpenAI-compatible one; a message that alone
exceeds the cap is a 400 naming it."""

from __future__ import annotations

import pytest

from sessions_app.services import EpisodeInput, episodes_bulk_create
from sessions_app.tokens import count_tokens
from tests.factories import ChatSessionFactory

pytestmark = pytest.mark.django_db

CAP = 1500
LONG_MESSAGE = "tell me about the harbour " * 4000  # about 100k characters


@pytest.fixture
def model(fake_model, settings):
    settings.INFERENCE_BACKEND = "ollama"
    settings.INFERENCE_SERVICE_URL = fake_model.url
    settings.CHAT_MODEL = "fake-chat"
    settings.CHAT_MAX_PROMPT_TOKENS = CAP
    return fake_model


@pytest.fixture
def long_session(owner):
    session = ChatSessionFactory(owner=owner)
    items: list[EpisodeInput] = [
        {"user_input": f"Question {n} about the harbour and its boats", "response": "An answer. " * 60}
        for n in range(300)
    ]
    episodes_bulk_create(session=session, items=items)
    return session


def sent_tokens(server) -> list[int]:
    return [
        sum(count_tokens(m["content"]) for m in r["body"]["messages"])
        for r in server.requests
        if r["path"] == "/api/chat"
    ]


def test_a_large_budget_is_capped(api_client, long_session, model, settings):
    # Every exchange shares the question's words and nothing else: no floor, so the cap is what stops it.
    settings.CONTEXT_RELEVANCE_FLOOR = 0.0
    message = "What did I ask about the harbour? " * 50
    answer = api_client.post(
        f"/api/sessions/{long_session.uuid}/chat/", {"message": message, "budget": 1_000_000}, format="json"
    )
    assert answer.status_code == 201, answer.content
    (tokens,) = sent_tokens(model)
    assert 1000 < tokens <= CAP


def test_the_budget_bounds_the_whole_prompt(api_client, long_session, model):
    answer = api_client.post(
        f"/api/sessions/{long_session.uuid}/chat/", {"message": "The harbour?", "budget": 600}, format="json"
    )
    assert answer.status_code == 201, answer.content
    assert sent_tokens(model)[0] <= 600


def test_a_message_over_the_cap_is_400_naming_it(api_client, long_session, model):
    answer = api_client.post(
        f"/api/sessions/{long_session.uuid}/chat/", {"message": LONG_MESSAGE, "budget": 1_000_000}, format="json"
    )
    assert answer.status_code == 400
    assert "message" in answer.json()
    assert sent_tokens(model) == []


def test_openai_endpoint_is_capped(api_client, long_session, model):
    header = {"HTTP_X_NEXUS_SESSION": str(long_session.uuid)}
    body = {
        "model": "fake-chat",
        "messages": [
            {"role": "system", "content": "Be brief. " * 100},
            {"role": "user", "content": "What did I ask about the harbour? " * 50},
        ],
        "metadata": {"nexus_budget": "1000000"},
    }
    answer = api_client.post("/v1/chat/completions", body, format="json", **header)
    assert answer.status_code == 200, answer.content
    (tokens,) = sent_tokens(model)
    assert 1000 < tokens <= CAP

    body["messages"][-1]["content"] = LONG_MESSAGE
    answer = api_client.post("/v1/chat/completions", body, format="json", **header)
    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == "messages"
    assert len(sent_tokens(model)) == 1

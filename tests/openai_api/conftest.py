"""The real ``openai`` client against a live server of the suite, and the
fake model server behind it (speaking Ollama unless a test says otherwise)."""

from __future__ import annotations

import openai
import pytest
from rest_framework.authtoken.models import Token


def client_for(live_server, key: str) -> openai.OpenAI:
    # No retries: a test that expects a 5xx must see the first answer.
    return openai.OpenAI(base_url=f"{live_server.url}/v1", api_key=key, max_retries=0, timeout=20)


@pytest.fixture
def client(live_server, owner) -> openai.OpenAI:
    return client_for(live_server, Token.objects.create(user=owner).key)


@pytest.fixture
def other_client(live_server, other_user) -> openai.OpenAI:
    return client_for(live_server, Token.objects.create(user=other_user).key)


def chat_requests(fake_model, question: str) -> list[dict]:
    """What the fake model server received for chat calls whose last message is ``question``."""
    found = []
    for record in fake_model.requests:
        body = record["body"] or {}
        messages = body.get("messages") or []
        if (
            record["path"] in ("/api/chat", "/v1/chat/completions")
            and messages
            and messages[-1]["content"] == question
        ):
            found.append(body)
    return found

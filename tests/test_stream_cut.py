"""A model stream cut before its final message (Ollama's ``done: true``,
OpenAI's ``finish_reason`` / ``[DONE]``) is an error, never a complete reply:
nothing is stored and the client is told."""

from __future__ import annotations

import json

import openai
import pytest
from rest_framework.authtoken.models import Token

from sessions_app.models import Episode
from summaries.inference import TransientInferenceError, get_client
from tests.factories import ChatSessionFactory
from tests.openai_api.conftest import client_for

SSE = "text/event-stream"


@pytest.mark.parametrize("backend", ["ollama", "openai"])
def test_client_raises_for_a_cut_stream(fake_model, settings, backend):
    settings.INFERENCE_BACKEND = backend
    settings.INFERENCE_SERVICE_URL = fake_model.url
    fake_model.set_mode("cut_stream")
    stream = get_client().chat_stream([{"role": "user", "content": "Tell me a long story"}])
    with pytest.raises(TransientInferenceError, match="ended early"):
        list(stream)
    assert stream.completion is None


@pytest.mark.django_db
@pytest.mark.parametrize("backend", ["ollama", "openai"])
def test_cut_stream_ends_with_an_error_event_and_stores_nothing(
    api_client, session, model, settings, backend
):
    settings.INFERENCE_BACKEND = backend
    model.set_mode("cut_stream")
    response = api_client.post(
        f"/api/sessions/{session.uuid}/chat/", {"message": "Tell me a story"}, format="json", HTTP_ACCEPT=SSE
    )
    assert response.status_code == 200
    body = b"".join(response.streaming_content).decode()
    events = [json.loads(part[len("data: ") :]) for part in body.split("\n\n") if part]
    assert events[0]["text"]  # the first chunk went out before the cut
    assert "done" not in events[-1]
    assert events[-1]["error"] and events[-1]["transient"] is True
    assert not Episode.objects.filter(session=session).exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("backend", ["ollama", "openai"])
def test_cut_stream_through_v1_raises_in_the_sdk_and_stores_nothing(
    live_server, owner, model, settings, backend
):
    settings.INFERENCE_BACKEND = backend
    model.set_mode("cut_stream")
    session = ChatSessionFactory(owner=owner)
    client = client_for(live_server, Token.objects.create(user=owner).key)
    stream = client.chat.completions.create(
        model="fake-chat",
        messages=[{"role": "user", "content": "Tell me a story"}],
        stream=True,
        extra_headers={"X-Nexus-Session": str(session.uuid)},
    )
    with pytest.raises(openai.APIError):
        for chunk in stream:
            assert not (chunk.choices and chunk.choices[0].finish_reason)
    assert not Episode.objects.filter(session=session).exists()

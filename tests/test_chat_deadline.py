"""``CHAT_TURN_TIMEOUT_SECONDS``: a chat turn has an overall deadline, so a
model that trickles its reply (a chunk every few seconds, each well inside
the read timeout) cannot hold a web thread for minutes. On expiry nothing is
stored and the client gets a 504 (or an error event in a stream)."""

from __future__ import annotations

import json

import openai
import pytest
from rest_framework.authtoken.models import Token

from sessions_app.models import Episode
from summaries.chat_record import turn_timed_out
from tests.factories import ChatSessionFactory
from tests.openai_api.conftest import client_for

SSE = "text/event-stream"


@pytest.fixture
def short_turns(settings):
    settings.CHAT_TURN_TIMEOUT_SECONDS = 1.5
    settings.INFERENCE_TIMEOUT_SECONDS = 60.0


def chat_url(session) -> str:
    return f"/api/sessions/{session.uuid}/chat/"


@pytest.mark.django_db
def test_slow_model_answers_504_and_stores_nothing(api_client, session, model, short_turns):
    model.set_mode("slow", slow_seconds=20)
    response = api_client.post(chat_url(session), {"message": "Are you there?"}, format="json")
    assert response.status_code == 504
    assert response.json()["transient"] is True
    assert "nothing was stored" in response.json()["detail"]
    assert response.json()["detail"] == turn_timed_out()  # the /v1 endpoints say the same
    assert not Episode.objects.filter(session=session).exists()


@pytest.mark.django_db
@pytest.mark.parametrize("backend", ["ollama", "openai"])
def test_trickling_stream_ends_with_an_error_event_and_stores_nothing(
    api_client, session, model, short_turns, settings, backend
):
    settings.INFERENCE_BACKEND = backend
    model.set_mode("trickle", trickle_seconds=0.6)
    response = api_client.post(
        chat_url(session), {"message": "Tell me a long story"}, format="json", HTTP_ACCEPT=SSE
    )
    assert response.status_code == 200
    body = b"".join(response.streaming_content).decode()
    events = [json.loads(part[len("data: ") :]) for part in body.split("\n\n") if part]
    assert "done" not in events[-1]
    assert "within 1.5 seconds" in events[-1]["error"]
    assert not Episode.objects.filter(session=session).exists()


@pytest.mark.django_db(transaction=True)
def test_v1_slow_model_answers_504_and_stores_nothing(live_server, owner, model, short_turns):
    model.set_mode("slow", slow_seconds=20)
    session = ChatSessionFactory(owner=owner)
    client = client_for(live_server, Token.objects.create(user=owner).key)
    with pytest.raises(openai.InternalServerError) as caught:
        client.chat.completions.create(
            model="fake-chat",
            messages=[{"role": "user", "content": "Are you there?"}],
            extra_headers={"X-Nexus-Session": str(session.uuid)},
        )
    assert caught.value.status_code == 504
    assert caught.value.body["code"] == "timeout"
    assert caught.value.body["message"] == turn_timed_out() == (
        "The chat model did not finish its reply within 1.5 seconds (CHAT_TURN_TIMEOUT_SECONDS); "
        "nothing was stored. Please try again."
    )
    assert not Episode.objects.filter(session=session).exists()


@pytest.mark.django_db(transaction=True)
def test_v1_trickling_stream_raises_in_the_sdk_and_stores_nothing(live_server, owner, model, short_turns):
    model.set_mode("trickle", trickle_seconds=0.6)
    session = ChatSessionFactory(owner=owner)
    client = client_for(live_server, Token.objects.create(user=owner).key)
    stream = client.chat.completions.create(
        model="fake-chat",
        messages=[{"role": "user", "content": "Tell me a long story"}],
        stream=True,
        extra_headers={"X-Nexus-Session": str(session.uuid)},
    )
    with pytest.raises(openai.APIError, match="CHAT_TURN_TIMEOUT_SECONDS"):
        list(stream)
    assert not Episode.objects.filter(session=session).exists()

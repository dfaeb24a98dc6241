"""Chat turns: context to the chat model, reply stored as an episode, JSON or
streamed; model failures store nothing."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
from django.db import DatabaseError

from sessions_app.models import ChatSession, Episode
from summaries import chat as chat_module
from summaries.api.context_views import stream_events
from summaries.chat import SYSTEM_PROMPT, ChatTurnError, chat_turn, chat_turn_stream
from summaries.context import build_context
from summaries.inference import TransientInferenceError
from summaries.inference.base import ChatStream, Completion
from summaries.models import Summary
from tests.factories import ChatSessionFactory, EpisodeFactory
from tests.fake_model_server import closed_port_url, reply_text

pytestmark = pytest.mark.django_db

SSE = "text/event-stream"


@pytest.fixture
def session(owner):
    session = ChatSessionFactory(owner=owner)
    EpisodeFactory(session=session, user_input="Who wrote Hamlet?", response="Shakespeare did. Around 1600.")
    EpisodeFactory(session=session, user_input="When was he born?", response="In 1564. In Stratford.")
    session.refresh_from_db()  # the counters the write path kept
    return session


def url(session, tail: str = "chat/") -> str:
    return f"/api/sessions/{session.uuid}/{tail}"


def events(response) -> list[dict]:
    body = b"".join(response.streaming_content).decode()
    assert body.endswith("\n\n")
    chunks = body.split("\n\n")[:-1]
    assert all(chunk.startswith("data: ") for chunk in chunks)
    return [json.loads(chunk[len("data: ") :]) for chunk in chunks]


def single_event(response) -> dict:
    body = response.content.decode()
    assert body.startswith("data: ") and body.endswith("\n\n")
    return json.loads(body[len("data: ") :])


def chat_requests(server) -> list[dict]:
    return [r for r in server.requests if r["path"] == "/api/chat"]


# --- JSON -------------------------------------------------------------------


def test_chat_json_sends_the_context_and_stores_the_episode(api_client, session, model):
    expected_context = build_context(session=session, question="What else did he write?")
    before = Episode.objects.filter(session=session).count()

    response = api_client.post(url(session), {"message": "What else did he write?"}, format="json")

    assert response.status_code == 201, response.content
    body = response.json()
    sent = chat_requests(model)
    assert len(sent) == 1
    assert sent[0]["body"]["model"] == "fake-chat"
    assert sent[0]["body"]["stream"] is False
    messages = sent[0]["body"]["messages"]
    assert messages == [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": expected_context.prompt},
    ]
    assert "User Question: What else did he write?" in messages[1]["content"]
    assert "Q1: Who wrote Hamlet?\nA1: Shakespeare did. Around 1600." in messages[1]["content"]

    assert body["reply"] == reply_text(expected_context.prompt)
    episode = Episode.objects.get(pk=body["episode"]["id"])
    assert (episode.user_input, episode.response) == ("What else did he write?", body["reply"])
    assert set(body["episode"]) == {
        "id", "position", "user_input", "response", "token_count", "metadata", "created_at"
    }
    assert body["episode"]["token_count"] == episode.token_count > 0
    assert body["context"] == {
        "token_count": expected_context.token_count,
        "full_history_tokens": expected_context.full_history_tokens,
    }
    assert Episode.objects.filter(session=session).count() == before + 1
    session.refresh_from_db()
    assert session.cached_episode_count == before + 1


def test_next_turn_sees_the_stored_reply(api_client, session, model):
    first = api_client.post(url(session), {"message": "First?"}, format="json").json()
    api_client.post(url(session), {"message": "Second?"}, format="json")
    prompt = chat_requests(model)[-1]["body"]["messages"][1]["content"]
    assert f"Q3: First?\nA3: {first['reply']}" in prompt


def test_offline_backend_marks_the_reply(api_client, session, settings):
    settings.INFERENCE_BACKEND = "offline"
    response = api_client.post(url(session), {"message": "Hello?"}, format="json")
    assert response.status_code == 201
    assert response.json()["reply"].startswith("[offline]")
    assert Episode.objects.get(pk=response.json()["episode"]["id"]).response.startswith("[offline]")


@pytest.mark.parametrize(
    ("mode", "status", "transient"),
    [
        ("http_500", 503, True),
        ("http_429", 503, True),
        ("http_400", 502, False),
        ("empty_content", 502, False),
    ],
)
def test_model_failure_is_a_clear_error_and_stores_nothing(
    api_client, session, model, mode, status, transient
):
    model.set_mode(mode)
    before = Episode.objects.count()
    response = api_client.post(url(session), {"message": "Anyone there?"}, format="json")
    assert response.status_code == status
    body = response.json()
    assert body["transient"] is transient
    assert "nothing was stored" in body["detail"]
    assert model.url not in body["detail"]
    assert Episode.objects.count() == before


def test_unreachable_model_is_503(api_client, session, settings):
    settings.INFERENCE_BACKEND = "ollama"
    settings.INFERENCE_SERVICE_URL = closed_port_url()
    before = Episode.objects.count()
    response = api_client.post(url(session), {"message": "Hello?"}, format="json")
    assert response.status_code == 503
    assert "not available" in response.json()["detail"]
    assert Episode.objects.count() == before


# --- streaming --------------------------------------------------------------


def test_chat_stream_sends_chunks_then_done(api_client, session, model):
    expected_context = build_context(session=session, question="Tell me more.")
    before = Episode.objects.count()

    response = api_client.post(url(session), {"message": "Tell me more."}, format="json", HTTP_ACCEPT=SSE)

    assert response.status_code == 200
    assert response["Content-Type"].startswith(SSE)
    assert response.streaming
    received = events(response)
    texts = [e["text"] for e in received[:-1]]
    assert len(texts) > 1
    assert "".join(texts) == reply_text(expected_context.prompt)
    done = received[-1]
    assert done["done"] is True
    episode = Episode.objects.get(pk=done["episode"]["id"])
    assert episode.response == "".join(texts)
    assert episode.user_input == "Tell me more."
    assert done["context"]["token_count"] == expected_context.token_count
    assert Episode.objects.count() == before + 1
    sent = chat_requests(model)[0]["body"]
    assert sent.get("stream", True) is True
    assert sent["messages"][1]["content"] == expected_context.prompt


def test_chat_stream_offline(api_client, session, settings):
    settings.INFERENCE_BACKEND = "offline"
    received = events(api_client.post(url(session), {"message": "Hi"}, format="json", HTTP_ACCEPT=SSE))
    assert "".join(e["text"] for e in received[:-1]).startswith("[offline]")
    assert received[-1]["done"] is True


def test_chat_stream_failure_before_first_chunk(api_client, session, model):
    model.set_mode("http_500")
    before = Episode.objects.count()
    response = api_client.post(url(session), {"message": "Hi"}, format="json", HTTP_ACCEPT=SSE)
    assert response.status_code == 503
    event = single_event(response)
    assert "nothing was stored" in event["error"]
    assert event["transient"] is True
    assert Episode.objects.count() == before


class BreaksMidStream:
    """A client whose stream yields two chunks, then loses the connection."""

    def chat_stream(self, messages, *, model=None, **kwargs) -> ChatStream:
        def chunks() -> Iterator[str]:
            yield "Partial "
            yield "answer "
            raise TransientInferenceError("connection reset by peer", backend="stub")

        def finish(text: str) -> Completion:
            return Completion(text=text, model="stub", prompt_tokens=1, completion_tokens=1, duration_ms=1)

        return ChatStream(chunks(), finish)


def test_chat_stream_failure_mid_stream_stores_nothing(api_client, session, use_client):
    use_client(BreaksMidStream())
    before = Episode.objects.count()
    response = api_client.post(url(session), {"message": "Hi"}, format="json", HTTP_ACCEPT=SSE)
    assert response.status_code == 200  # headers went out with the first chunk
    received = events(response)
    assert [e.get("text") for e in received[:2]] == ["Partial ", "answer "]
    assert received[-1]["error"].startswith("The chat model is not available")
    assert received[-1]["transient"] is True
    assert not any(e.get("done") for e in received)
    assert Episode.objects.count() == before


def finished(text: str) -> Completion:
    return Completion(text=text, model="stub", prompt_tokens=1, completion_tokens=1, duration_ms=1)


class DeletesTheSession:
    """A client during whose answer the session is deleted (say, from another tab)."""

    def __init__(self, session) -> None:
        self.session_pk = session.pk

    def _delete(self) -> None:
        ChatSession.objects.filter(pk=self.session_pk).delete()

    def chat(self, messages, *, model=None, **kwargs) -> Completion:
        self._delete()
        return finished("Too late.")

    def chat_stream(self, messages, *, model=None, **kwargs) -> ChatStream:
        def chunks() -> Iterator[str]:
            yield "Too "
            self._delete()
            yield "late."

        return ChatStream(chunks(), finished)


def test_session_deleted_during_the_turn_is_404(api_client, session, use_client):
    use_client(DeletesTheSession(session))
    response = api_client.post(url(session), {"message": "Still there?"}, format="json")
    assert response.status_code == 404
    assert "nothing was stored" in response.json()["detail"]
    assert response.json()["transient"] is False
    assert not Episode.objects.filter(user_input="Still there?").exists()


def test_session_deleted_during_a_stream_ends_with_an_error_event(api_client, session, use_client):
    use_client(DeletesTheSession(session))
    response = api_client.post(url(session), {"message": "Still there?"}, format="json", HTTP_ACCEPT=SSE)
    received = events(response)
    assert [e.get("text") for e in received[:2]] == ["Too ", "late."]
    assert "nothing was stored" in received[-1]["error"]
    assert received[-1]["transient"] is False
    assert not any(e.get("done") for e in received)
    assert not Episode.objects.filter(user_input="Still there?").exists()


def test_unexpected_failure_while_storing_ends_the_stream_with_an_error_event(
    api_client, session, model, monkeypatch, caplog
):
    def broken_store(**kwargs):
        raise DatabaseError("server closed the connection unexpectedly")

    monkeypatch.setattr(chat_module, "episode_create", broken_store)
    with caplog.at_level(logging.ERROR, logger="nexus.chat"):
        response = api_client.post(url(session), {"message": "Hi"}, format="json", HTTP_ACCEPT=SSE)
        received = events(response)
    assert received[0]["text"]
    assert set(received[-1]) == {"error", "transient"}
    assert "server closed" not in received[-1]["error"]
    assert not any(e.get("done") for e in received)
    assert any(r.exc_info for r in caplog.records if r.name == "nexus.chat")


def test_abandoned_stream_stores_nothing(session, model):
    stream = chat_turn_stream(caller=session.owner, session=session, message="Hi")
    first = next(stream)
    assert first
    stream.close()
    assert stream.turn is None
    assert list(stream) == []
    assert Episode.objects.filter(user_input="Hi").count() == 0


def test_client_leaving_mid_stream_stores_nothing(session, model, caplog):
    """The server closes the response body when the client has gone."""
    body = stream_events(chat_turn_stream(caller=session.owner, session=session, message="Bye").start())
    assert next(body).startswith(b'data: {"text":')
    with caplog.at_level(logging.INFO, logger="nexus.chat"):
        body.close()
    assert not Episode.objects.filter(user_input="Bye").exists()
    (record,) = [r for r in caplog.records if r.name == "nexus.chat"]
    assert record.outcome == "abandoned"


def test_service_stream_stores_after_the_last_chunk(session, model):
    stream = chat_turn_stream(caller=session.owner, session=session, message="Streaming?").start()
    assert Episode.objects.filter(user_input="Streaming?").count() == 0
    text = "".join(stream)
    assert stream.turn is not None
    assert stream.turn.episode.response == text == stream.turn.reply
    assert Episode.objects.filter(user_input="Streaming?").count() == 1


def test_service_raises_chat_turn_error(session, model):
    model.set_mode("http_400")
    with pytest.raises(ChatTurnError) as info:
        chat_turn(caller=session.owner, session=session, message="Hi")
    assert info.value.transient is False
    assert "HTTP 400" in info.value.message
    assert Episode.objects.filter(user_input="Hi").count() == 0


# --- logging ----------------------------------------------------------------


def test_one_log_record_per_turn_with_timings_and_no_text(api_client, session, model, caplog, settings):
    settings.LOG_CONTENT = False
    with caplog.at_level(logging.INFO, logger="nexus.chat"):
        api_client.post(url(session), {"message": "A secret question"}, format="json")
    records = [r for r in caplog.records if r.name == "nexus.chat"]
    assert len(records) == 1
    record = records[0]
    assert record.outcome == "ok"
    assert record.session == str(session.uuid)
    assert record.total_ms >= record.model_ms >= 0
    assert record.context_ms >= 0
    assert record.context_tokens > 0
    assert not hasattr(record, "question") and not hasattr(record, "reply")
    assert "secret" not in record.getMessage()


def test_log_content_adds_the_text(session, model, caplog, settings):
    settings.LOG_CONTENT = True
    with caplog.at_level(logging.INFO, logger="nexus.chat"):
        chat_turn(caller=session.owner, session=session, message="Visible question")
    (record,) = [r for r in caplog.records if r.name == "nexus.chat"]
    assert record.question == "Visible question"


def test_failed_turn_is_logged_once(api_client, session, model, caplog):
    model.set_mode("http_500")
    with caplog.at_level(logging.INFO, logger="nexus.chat"):
        api_client.post(url(session), {"message": "Hi"}, format="json", HTTP_ACCEPT=SSE)
    records = [r for r in caplog.records if r.name == "nexus.chat"]
    assert len(records) == 1
    assert records[0].outcome == "error"
    assert records[0].transient is True


# --- access and input -------------------------------------------------------


def test_other_user_gets_404_and_nothing_is_stored(other_client, session, model):
    before = Episode.objects.count()
    assert other_client.post(url(session), {"message": "Hi"}, format="json").status_code == 404
    streamed = other_client.post(url(session), {"message": "Hi"}, format="json", HTTP_ACCEPT=SSE)
    assert streamed.status_code == 404
    assert Episode.objects.count() == before
    assert chat_requests(model) == []


def test_staff_may_chat_in_any_session(staff_client, session, model):
    response = staff_client.post(url(session), {"message": "Hi"}, format="json")
    assert response.status_code == 201


def test_anonymous_is_refused(anon_client, session):
    assert anon_client.post(url(session), {"message": "Hi"}, format="json").status_code in (401, 403)


def test_unknown_or_malformed_uuid_is_404(api_client):
    malformed = "/api/sessions/not-a-uuid/chat/"
    assert api_client.post(malformed, {"message": "Hi"}, format="json").status_code == 404
    missing = "/api/sessions/00000000-0000-0000-0000-000000000000/chat/"
    assert api_client.post(missing, {"message": "Hi"}, format="json").status_code == 404


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({}, "message"),
        ({"message": ""}, "message"),
        ({"message": "   "}, "message"),
        ({"message": 5 * "x" + "\x00"}, "message"),
        ({"message": "Hi", "budget": 0}, "budget"),
        ({"message": "Hi", "budget": "lots"}, "budget"),
    ],
)
def test_bad_input_is_400_naming_the_field(api_client, session, payload, field):
    response = api_client.post(url(session), payload, format="json")
    assert response.status_code == 400
    assert field in response.json()


def test_message_length_limit(api_client, session, settings):
    settings.EPISODE_MAX_CHARS = 10
    response = api_client.post(url(session), {"message": "x" * 11}, format="json")
    assert response.status_code == 400
    assert "message" in response.json()


def test_bad_input_with_event_stream_accept_is_an_error_event(api_client, session):
    response = api_client.post(url(session), {}, format="json", HTTP_ACCEPT=SSE)
    assert response.status_code == 400
    event = single_event(response)
    assert event["error"].startswith("message:")
    assert "message" in event["errors"]


def test_malformed_json_is_400(api_client, session):
    response = api_client.post(url(session), "{not json", content_type="application/json")
    assert response.status_code == 400


def test_stored_turn_triggers_summarization(api_client, owner, settings, django_capture_on_commit_callbacks):
    settings.INFERENCE_BACKEND = "offline"
    session = ChatSessionFactory(owner=owner)
    long_reply = "A long answer about the topic. " * 20
    for n in range(settings.SUMMARY_MIN_EPISODES - 1):
        # Each write with its after-commit callbacks run, as in production.
        with django_capture_on_commit_callbacks(execute=True):
            EpisodeFactory(session=session, user_input=f"Question {n}?", response=long_reply)
    assert not Summary.objects.filter(session=session).exists()

    with django_capture_on_commit_callbacks(execute=True):
        response = api_client.post(url(session), {"message": "One more?"}, format="json")

    assert response.status_code == 201
    summary = Summary.objects.get(session=session)
    assert summary.last_episode_id == response.json()["episode"]["id"]

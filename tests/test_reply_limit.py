"""A model reply longer than ``EPISODE_MAX_CHARS`` is stored cut to the
limit, ending in a marker, the cut recorded in the episode's metadata and
logged, on every way of chatting; the user's message is stored whole and the
caller still gets the whole reply. Never a 500: what one path stores, every
other path (an export imported back) accepts."""

from __future__ import annotations

import json
import logging

import pytest

from sessions_app.models import Episode
from sessions_app.validation import episode_problems
from summaries.turn_metadata import CUT_MARKER

pytestmark = pytest.mark.django_db

LIMIT = 400
LONG = ("The tomatoes want water every other day. " * 25).strip()  # 1024 characters
MESSAGE = ("How often should I water the tomatoes? " * 9).strip()  # within the limit, stored whole


@pytest.fixture(autouse=True)
def small_limit(settings):
    settings.EPISODE_MAX_CHARS = LIMIT


def assert_stored_cut(session, caplog) -> Episode:
    episode = Episode.objects.get(session=session)
    assert episode.user_input == MESSAGE
    assert len(episode.response) == LIMIT and episode.response.endswith(CUT_MARKER)
    kept = LIMIT - len(CUT_MARKER)
    assert episode.response == LONG[:kept] + CUT_MARKER
    assert episode.metadata["reply_cut_chars"] == len(LONG) - kept
    assert episode_problems(user_input=episode.user_input, response=episode.response) == {}
    [record] = [r for r in caplog.records if r.getMessage() == "chat reply cut to EPISODE_MAX_CHARS"]
    assert record.levelno == logging.WARNING
    assert (record.reply_chars, record.cut_chars) == (len(LONG), len(LONG) - kept)
    return episode


def test_the_chat_api_stores_a_long_reply_cut_and_answers_it_whole(api_client, session, model, caplog):
    model.set_mode("ok", answers=[LONG])
    answer = api_client.post(f"/api/sessions/{session.uuid}/chat/", {"message": MESSAGE}, format="json")
    assert answer.status_code == 201, answer.content
    assert answer.json()["reply"] == LONG
    stored = assert_stored_cut(session, caplog)
    assert answer.json()["episode"]["response"] == stored.response


def test_a_streamed_turn_stores_it_cut_too(api_client, session, model, caplog):
    model.set_mode("ok", answers=[LONG])
    answer = api_client.post(
        f"/api/sessions/{session.uuid}/chat/",
        {"message": MESSAGE},
        format="json",
        HTTP_ACCEPT="text/event-stream",
    )
    assert answer.status_code == 200
    body = b"".join(answer.streaming_content).decode()
    chunks = [chunk for chunk in body.split("\n\n") if chunk.startswith("data: ")]
    events = [json.loads(chunk[len("data: ") :]) for chunk in chunks]
    assert "".join(e.get("text", "") for e in events) == LONG
    assert_stored_cut(session, caplog)


def test_the_openai_endpoint_stores_it_cut_and_answers_it_whole(api_client, session, model, caplog):
    model.set_mode("ok", answers=[LONG])
    answer = api_client.post(
        "/v1/chat/completions",
        {"model": "fake-chat", "messages": [{"role": "user", "content": MESSAGE}]},
        format="json",
        HTTP_X_NEXUS_SESSION=str(session.uuid),
    )
    assert answer.status_code == 200, answer.content
    assert answer.json()["choices"][0]["message"]["content"] == LONG
    assert_stored_cut(session, caplog)


def test_a_reply_at_the_limit_is_stored_whole(api_client, session, model, caplog):
    model.set_mode("ok", answers=[LONG[:LIMIT]])
    answer = api_client.post(f"/api/sessions/{session.uuid}/chat/", {"message": MESSAGE}, format="json")
    assert answer.status_code == 201
    episode = Episode.objects.get(session=session)
    assert episode.response == LONG[:LIMIT] and "reply_cut_chars" not in episode.metadata
    assert not [r for r in caplog.records if "cut" in r.getMessage()]

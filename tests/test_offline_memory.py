"""Offline chat turns: the stored reply is the marker line alone, and what
memory found for the message is kept in the episode's metadata, shown on the
chat page and never fed back into memory (index, vectors, summaries)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from django.template.loader import render_to_string
from django.test import Client

from sessions_app.labels import episode_label
from sessions_app.models import Episode, EpisodeVector
from sessions_app.semantic.encoder import encoder
from sessions_app.semantic.passages import episode_texts
from sessions_app.semantic.vectors import to_matrix
from sessions_app.shown_metadata import shown
from summaries.context import build_context
from summaries.inference.offline import OFFLINE_CHAT_REPLY
from summaries.models import Summary
from summaries.offline_memory import nearest_sentences, offline_memory
from tests.factories import ChatSessionFactory, EpisodeFactory

pytestmark = pytest.mark.django_db

SSE = "text/event-stream"
CAT = "We moved flats in March. My cat Miso is afraid of the vacuum cleaner and hides under the bed."
TOPICS = [
    "I started learning the cello with a teacher from the conservatory.",
    CAT,
    "Our neighbour grows tomatoes on the balcony every summer.",
    "The bakery on Elm Street sells rye bread on Fridays only.",
    "My brother Tomas is training for the Berlin marathon in September.",
    "We painted the kitchen a pale green colour last weekend.",
    "The library closes early on Wednesdays during the holidays.",
    "I booked a week in Porto for the end of October.",
    "The car needs new winter tyres before December.",
    "My daughter plays goalkeeper in the school football team.",
    "The plumber comes on Thursday to fix the shower.",
    "I finally finished reading the long Russian novel.",
]
QUESTION = "What is my cat afraid of?"


#: Later small talk: makes the history dearer than a context, which then quotes and summarizes it.
SMALL_TALK = [f"Note {n}: nothing new about the weekend plans, just saying hello again." for n in range(40)]


def chat_through(owner, capture, messages: list[str]):
    """Offline exchanges, each write's after-commit work (summaries) run as in production."""
    session = ChatSessionFactory(owner=owner)
    episodes = []
    for text in messages:
        with capture(execute=True):
            episodes.append(EpisodeFactory(session=session, user_input=text, response=OFFLINE_CHAT_REPLY))
    session.refresh_from_db()
    return session, episodes


@pytest.fixture
def chatted(owner, django_capture_on_commit_callbacks):
    """The twelve topics, then small talk: longer than a context holds whole."""
    return chat_through(owner, django_capture_on_commit_callbacks, TOPICS + SMALL_TALK)


def test_a_short_chat_is_sent_whole_and_shows_what_matters_first(api_client, owner, django_capture_on_commit_callbacks):
    session, episodes = chat_through(owner, django_capture_on_commit_callbacks, TOPICS)
    memory = chat(api_client, session, QUESTION).json()["episode"]["metadata"]["offline_memory"]
    assert memory["whole"] is True and memory["recent"] == len(TOPICS)
    # No summary goes to the model when the whole conversation does.
    assert memory["summary"] == ""
    assert memory["retrieved"][0]["label"] == episode_label(
        created_at=episodes[1].created_at, position=episodes[1].position
    )
    assert "Miso is afraid of the vacuum cleaner" in memory["retrieved"][0]["text"]
    page = Client()
    page.force_login(owner)
    html = page.get(f"/sessions/{session.uuid}/").content.decode()
    assert f"The whole conversation goes in full ({len(TOPICS)} exchanges)" in html


def chat(api_client, session, message: str, **extra):
    return api_client.post(f"/api/sessions/{session.uuid}/chat/", {"message": message}, format="json", **extra)


def test_an_offline_reply_is_the_marker_and_the_memory_is_in_its_metadata(api_client, chatted):
    session, episodes = chatted
    cat = episodes[1]
    assert Summary.objects.filter(session=session).exists()

    response = chat(api_client, session, QUESTION)

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["reply"] == OFFLINE_CHAT_REPLY
    stored = Episode.objects.get(pk=body["episode"]["id"])
    assert (stored.user_input, stored.response) == (QUESTION, OFFLINE_CHAT_REPLY)
    memory = stored.shown_metadata["offline_memory"]
    assert body["episode"]["metadata"]["offline_memory"] == memory
    # The earlier exchange that answers, first, labelled with its day and number, trimmed to
    # the sentence that matters (the move in March is left out), the offline reply not quoted.
    first = memory["retrieved"][0]
    assert first == {
        "label": episode_label(created_at=cat.created_at, position=cat.position),
        "text": "… My cat Miso is afraid of the vacuum cleaner and hides under the bed.",
        "reply": "",
    }
    assert first["label"].startswith("[") and f" · #{cat.position}]" in first["label"]
    assert 1 <= len(memory["retrieved"]) <= 3
    assert memory["retrieved_count"] >= len(memory["retrieved"])
    assert memory["recent"] == 8
    # The gist of the summaries, a few whole sentences, the cat's among them.
    assert "Miso is afraid of the vacuum cleaner" in memory["summary"]
    assert len(memory["summary"]) <= 600
    assert stored.metadata["source"] == "chat" and stored.token_count < 60  # the marker only


def test_a_streamed_offline_reply_streams_the_marker_and_ends_with_the_memory(api_client, chatted):
    session, _ = chatted
    response = chat(api_client, session, QUESTION, HTTP_ACCEPT=SSE)
    body = b"".join(response.streaming_content).decode()
    received = [json.loads(chunk.removeprefix("data: ")) for chunk in body.split("\n\n")[:-1]]
    assert "".join(e["text"] for e in received[:-1]) == OFFLINE_CHAT_REPLY
    done = received[-1]
    assert done["done"] is True
    assert done["episode"]["response"] == OFFLINE_CHAT_REPLY
    assert "Miso" in done["episode"]["metadata"]["offline_memory"]["retrieved"][0]["text"]


def test_the_first_message_shows_that_nothing_is_remembered_yet(api_client, owner):
    session = ChatSessionFactory(owner=owner)
    memory = chat(api_client, session, "Hello there, anyone home?").json()["episode"]["metadata"]["offline_memory"]
    assert memory == {
        "retrieved": [],
        "retrieved_count": 0,
        "summary": "",
        "recent": 0,
        "whole": False,
        "newest_in_part": False,
        "earlier": "none",
    }


def test_a_model_reply_carries_no_memory(api_client, chatted, model):
    session, _ = chatted
    metadata = chat(api_client, session, QUESTION).json()["episode"]["metadata"]
    assert "offline_memory" not in metadata


def test_openai_clients_get_the_marker_and_the_episode_keeps_the_memory(api_client, chatted, settings):
    session, episodes = chatted
    response = api_client.post(
        "/v1/chat/completions",
        {"model": settings.CHAT_MODEL, "messages": [{"role": "user", "content": QUESTION}]},
        format="json",
        HTTP_X_NEXUS_SESSION=str(session.uuid),
    )
    assert response.status_code == 200, response.content
    assert response.json()["choices"][0]["message"]["content"] == OFFLINE_CHAT_REPLY
    stored = Episode.objects.filter(session=session).latest("pk")
    assert stored.response == OFFLINE_CHAT_REPLY
    assert stored.metadata["source"] == "openai_api"
    label = stored.shown_metadata["offline_memory"]["retrieved"][0]["label"]
    assert label.endswith(f"#{episodes[1].position}]")


def test_the_chat_page_shows_the_memory_under_the_reply(api_client, chatted, owner):
    session, episodes = chatted
    chat(api_client, session, QUESTION)
    browser = Client()
    browser.force_login(owner)
    page = browser.get(f"/sessions/{session.uuid}/").content.decode()
    assert page.count('class="offline-memory"') == 1  # the earlier turns were written without one
    section = page[page.index('class="offline-memory"') :]
    section = section[: section.index("</section>")]
    assert episode_label(created_at=episodes[1].created_at, position=episodes[1].position) in section
    assert "My cat Miso is afraid of the vacuum cleaner" in section
    assert "From the summaries" in section
    assert "And the last 8 exchanges in full." in section


def test_the_quoted_memory_is_not_indexed(api_client, chatted):
    session, episodes = chatted
    before = api_client.get(f"/api/sessions/{session.uuid}/search/", {"q": "vacuum"}).json()["results"]
    assert [hit["episode"]["id"] for hit in before] == [episodes[1].pk]

    memory = chat(api_client, session, QUESTION).json()["episode"]["metadata"]["offline_memory"]
    assert "vacuum" in memory["retrieved"][0]["text"]

    after = api_client.get(f"/api/sessions/{session.uuid}/search/", {"q": "vacuum"}).json()["results"]
    assert [hit["episode"]["id"] for hit in after] == [episodes[1].pk]  # nothing new found
    across = api_client.get("/api/search/", {"q": "vacuum"}).json()["results"]
    assert [hit["episode"]["id"] for hit in across] == [episodes[1].pk]


def test_the_quoted_memory_is_neither_encoded_nor_summarized(
    api_client, chatted, settings, django_capture_on_commit_callbacks
):
    session, _ = chatted
    settings.CONTEXT_SEMANTIC_CANDIDATES = 5000
    for n in range(8):  # enough turns for a summary pass and an encoding task
        with django_capture_on_commit_callbacks(execute=True):
            assert chat(api_client, session, f"{QUESTION} Asking again, time {n}.").status_code == 201
    turns = list(Episode.objects.filter(session=session, metadata__source="chat"))
    assert all(turn.shown_metadata["offline_memory"]["retrieved"] for turn in turns)
    # Vectors of exactly the message and the marker reply (stored at reduced precision).
    encoded = [turn for turn in turns if EpisodeVector.objects.filter(episode_id=turn.pk).exists()]
    assert len(encoded) >= 4  # encoding runs once per CONTEXT_RECENT_EPISODES single writes
    for turn in encoded:
        stored, _ = to_matrix(list(EpisodeVector.objects.filter(episode_id=turn.pk).values_list("vector", flat=True)))
        expected = encoder().encode(episode_texts(turn.user_input, turn.response))
        assert np.allclose(stored, expected, atol=1e-3)
        shown = turn.shown_metadata["offline_memory"]["retrieved"][0]["text"]
        with_memory = encoder().encode(episode_texts(turn.user_input, f"{turn.response}\n{shown}"))
        assert not np.allclose(stored[0], with_memory[0], atol=1e-3)
    # Summaries quote what was written, never the memory shown with a reply.
    content = "\n".join(Summary.objects.chain(session.pk).values_list("content", flat=True))
    assert max(Summary.objects.chain(session.pk).values_list("last_episode_id", flat=True)) >= turns[2].pk
    assert "Asking again" in content
    assert " · #" not in content and "…" not in content and "[offline]" not in content


def test_memory_of_a_context_without_retrieval_or_summaries(owner):
    session = ChatSessionFactory(owner=owner)
    for text in TOPICS[:3]:
        EpisodeFactory(session=session, user_input=text, response=OFFLINE_CHAT_REPLY)
    session.refresh_from_db()
    context = build_context(session=session, question=QUESTION)
    stored = offline_memory(session_pk=session.pk, context=context, question=QUESTION)
    assert stored["quotes"] == [] and stored["gist"] == []
    memory = shown([(session.pk, {"offline_memory": stored})])[0]["offline_memory"]
    assert memory == {
        "retrieved": [],
        "retrieved_count": 0,
        "summary": "",
        "recent": 3,
        "whole": False,
        "newest_in_part": False,
        "earlier": "none",
    }


def test_nearest_sentences_keep_their_order_and_mark_the_cuts():
    text = "First about boats. Then my cat Miso. Then the weather. Finally the cat food brand."
    asked = {"cat"}
    assert nearest_sentences(text, asked, 2) == "… Then my cat Miso. … Finally the cat food brand."
    assert nearest_sentences(text, set(), 1) == "First about boats. …"
    assert nearest_sentences("One sentence only.", asked, 2) == "One sentence only."
    long = "word " * 200
    shown = nearest_sentences(long, asked, 1)
    assert len(shown) <= 300 and shown.endswith(" …")


def memory_note(owner, session) -> str:
    """The chat page's line on how the recent exchanges went in, for the newest reply's memory."""
    page = Client()
    page.force_login(owner)
    html = page.get(f"/sessions/{session.uuid}/").content.decode()
    section = html[html.rindex('class="offline-memory"') :]
    section = section[: section.index("</section>")]
    note = section[section.index('class="offline-memory-recent">') :]
    return note[note.index(">") + 1 : note.index("</p>")]


def test_the_memory_says_when_the_window_holds_fewer_exchanges_than_its_count(
    api_client, owner, django_capture_on_commit_callbacks, settings
):
    settings.SUMMARY_THRESHOLD_TOKENS = 10**9  # no summaries: the window and retrieval alone
    # Exchanges of about a hundred tokens: the window's share of 2,000 tokens holds a few of them.
    told = [f"{text} " + "It was a long day and I wrote down every detail of it. " * 8 for text in TOPICS]
    session, _ = chat_through(owner, django_capture_on_commit_callbacks, told)
    context = build_context(session=session, question=QUESTION)  # what the turn sees
    memory = chat(api_client, session, QUESTION).json()["episode"]["metadata"]["offline_memory"]
    assert 1 < memory["recent"] == len(context.recent) < settings.CONTEXT_RECENT_EPISODES
    assert memory["newest_in_part"] is False
    assert memory["earlier"] == "quoted"
    assert "Miso is afraid of the vacuum cleaner" in memory["retrieved"][0]["text"]
    assert memory_note(owner, session) == f"And the last {memory['recent']} exchanges in full."


def test_the_memory_says_when_the_newest_exchange_goes_in_part(
    api_client, owner, django_capture_on_commit_callbacks, settings
):
    settings.SUMMARY_THRESHOLD_TOKENS = 10**9
    # The newest exchange alone is longer than the window's share: it goes in by its newest part.
    pasted = " ".join(f"Line {n} of the build log: compiling module {n} of the planner." for n in range(120))
    session, episodes = chat_through(owner, django_capture_on_commit_callbacks, [*TOPICS, pasted])
    context = build_context(session=session, question=QUESTION)  # what the turn sees
    memory = chat(api_client, session, QUESTION).json()["episode"]["metadata"]["offline_memory"]
    assert context.recent[-1] == episodes[-1].pk and episodes[-1].pk in context.passages
    assert memory["newest_in_part"] is True and memory["recent"] == len(context.recent)
    assert memory["retrieved"]  # the cat, retrieved
    note = memory_note(owner, session)
    if memory["recent"] == 1:
        assert note == "And the last exchange, in part."
    else:
        assert note == f"And the last {memory['recent']} exchanges, the newest in part."
    assert "in full" not in note


def test_the_memory_of_small_talk_says_nothing_earlier_went_in(
    api_client, owner, django_capture_on_commit_callbacks, settings
):
    settings.CONTEXT_SEMANTIC_CANDIDATES = 5000  # retrieval by meaning, as in production: small talk is told
    session, _ = chat_through(owner, django_capture_on_commit_callbacks, TOPICS)
    memory = chat(api_client, session, "Thanks!").json()["episode"]["metadata"]["offline_memory"]
    assert memory["retrieved"] == [] and memory["summary"] == ""
    assert memory["earlier"] == "left_out" and memory["newest_in_part"] is False
    assert memory_note(owner, session) == (
        f"Only the last {memory['recent']} exchanges in full: nothing earlier is relevant enough to this message."
    )


BASE = {"retrieved": [], "retrieved_count": 0, "summary": "", "whole": False}


@pytest.mark.parametrize(
    ("memory", "note"),
    [
        (
            {"summary": "The cat hides.", "recent": 3, "newest_in_part": True},
            "And the last 3 exchanges, the newest in part.",
        ),
        (
            {"summary": "The cat hides.", "recent": 1, "newest_in_part": True},
            "And the last exchange, in part.",
        ),
        (
            {"summary": "The cat hides.", "recent": 1, "newest_in_part": False},
            "And the last exchange in full.",
        ),
        ({"summary": "The cat hides.", "recent": 8}, "And the last 8 exchanges in full."),
        (
            {"recent": 4, "earlier": "quoted"},
            "Older exchanges in brief (not summarised yet), and the last 4 exchanges in full.",
        ),
        (
            {"recent": 2, "earlier": "left_out", "newest_in_part": True},
            "Only the last 2 exchanges, the newest in part: nothing earlier is relevant enough to this message.",
        ),
        (
            {"recent": 2, "earlier": "none", "newest_in_part": True},
            "The 2 earlier exchanges, the newest in part: it is too long to send whole.",
        ),
        (
            {"recent": 1, "earlier": "none", "newest_in_part": True},
            "The earlier exchange, in part: it is too long to send whole.",
        ),
        # Stored before the window was a share of the budget: no "earlier", no "newest_in_part".
        (
            {"recent": 3},
            "The 3 earlier exchanges in full: the conversation is still short enough to send whole.",
        ),
        (
            {"recent": 5, "whole": True},
            "The whole conversation goes in full (5 exchanges): it costs less than a shorter context would.",
        ),
    ],
)
def test_the_memory_note_says_what_the_window_gave(memory, note):
    html = render_to_string("sessions/offline_memory.html", {"memory": BASE | memory})
    shown = html[html.index('class="offline-memory-recent">') :]
    assert shown[shown.index(">") + 1 : shown.index("</p>")] == note

"""An offline reply's ``offline_memory`` is stored as references and rendered
when read: rows written with the text are shown as stored, references that
name nothing of the reply's own session render as nothing, and a page of
episodes renders in a fixed number of queries."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.factories import ChatSessionFactory, EpisodeFactory

pytestmark = pytest.mark.django_db

WINDOW = {"retrieved_count": 1, "recent": 2, "whole": False, "newest_in_part": False, "earlier": "quoted"}


def memory_of(api_client, session, episode) -> dict:
    answer = api_client.get(f"/api/sessions/{session.uuid}/episodes/{episode.pk}/")
    assert answer.status_code == 200
    return answer.json()["metadata"]["offline_memory"]


def test_references_render_as_the_quoted_sentences(api_client, session):
    text = "We moved in March. My cat Miso hides under the bed."
    quoted = EpisodeFactory(session=session, user_input=text, response="Poor Miso.")
    refs = {"quotes": [{"episode": quoted.pk, "text": [1], "reply": [0]}], "gist": [], **WINDOW}
    reply = EpisodeFactory(session=session, metadata={"source": "chat", "offline_memory": refs})
    memory = memory_of(api_client, session, reply)
    [item] = memory["retrieved"]
    assert item["label"].endswith(f"#{quoted.position}]")
    assert (item["text"], item["reply"]) == ("… My cat Miso hides under the bed.", "Poor Miso.")
    assert memory["summary"] == "" and "quotes" not in memory and memory["recent"] == 2


def test_a_row_written_with_its_text_is_shown_as_stored(api_client, session):
    stored = {
        "retrieved": [{"label": "[8 May 2023 · #1]", "text": "Old text.", "reply": ""}],
        "summary": "Gist.",
    }
    reply = EpisodeFactory(session=session, metadata={"offline_memory": {**stored, **WINDOW}})
    assert memory_of(api_client, session, reply) == {**stored, **WINDOW}


def test_references_to_another_session_or_to_nothing_render_as_nothing(api_client, session, owner):
    elsewhere = EpisodeFactory(session=ChatSessionFactory(owner=owner), user_input="Secret elsewhere.")
    refs = {
        "quotes": [{"episode": elsewhere.pk, "text": [0]}, {"episode": "1"}, "x", {"episode": 10**9}],
        "gist": [{"summary": 10**9, "sentence": 0}, {"summary": None}],
        **WINDOW,
    }
    reply = EpisodeFactory(session=session, metadata={"offline_memory": refs})
    memory = memory_of(api_client, session, reply)
    assert memory["retrieved"] == [] and memory["summary"] == ""


def test_a_page_renders_in_the_same_queries_however_many_replies_it_holds(api_client, session):
    quoted = EpisodeFactory(session=session, user_input="The cello lesson is on Monday.")
    refs = {"quotes": [{"episode": quoted.pk, "text": [0], "reply": []}], "gist": [], **WINDOW}

    def page_queries() -> int:
        with CaptureQueriesContext(connection) as queries:
            answer = api_client.get(f"/api/sessions/{session.uuid}/episodes/", {"newest": 50})
        assert answer.status_code == 200
        assert all(
            "cello" in e["metadata"]["offline_memory"]["retrieved"][0]["text"]
            for e in answer.json()["results"]
            if "offline_memory" in e["metadata"]
        )
        return len(queries)

    EpisodeFactory(session=session, metadata={"offline_memory": refs})
    few = page_queries()
    for _ in range(10):
        EpisodeFactory(session=session, metadata={"offline_memory": refs})
    assert page_queries() == few


def test_the_queries_of_a_page_are_those_the_module_counts(owner):
    """Two queries for the quoted exchanges and the summary rows, whatever the
    page holds; lent quotes add one, and one per session that holds them."""
    from sessions_app.models import MemoryScope
    from summaries.offline_memory_shown import show_offline_memory
    from tests.factories import SummaryFactory

    lender, *readers = [ChatSessionFactory(owner=owner, memory_scope=MemoryScope.SHARED) for _ in range(3)]
    lent = EpisodeFactory(session=lender, user_input="The cello lesson is on Monday.")

    def queries(items: list[tuple[int, dict]]) -> int:
        with CaptureQueriesContext(connection) as captured:
            show_offline_memory(items)
        return len(captured)

    def reply(session, *, lend: bool) -> tuple[int, dict]:
        own = EpisodeFactory(session=session)
        row = SummaryFactory(session=session, first_episode_id=own.pk, last_episode_id=own.pk)
        quotes = [{"episode": own.pk, "text": [0], "reply": []}]
        if lend:
            quotes.append({"episode": lent.pk, "text": [0], "reply": [], "lent": True})
        gist = [{"summary": row.pk, "sentence": 0, "updated_at": row.updated_at.isoformat()}]
        return session.pk, {"offline_memory": {"quotes": quotes, "gist": gist, **WINDOW}}

    one = [reply(readers[0], lend=False)]
    assert queries(one) == queries(one * 20) == 2
    with_lent = [reply(readers[0], lend=True) for _ in range(5)]
    assert queries(with_lent) == 4
    assert queries(with_lent + [reply(readers[1], lend=True)]) == 5
    shown = show_offline_memory(with_lent[:1])[0]["offline_memory"]
    assert [item["text"] for item in shown["retrieved"]][-1] == "The cello lesson is on Monday."

"""Deleting an exchange leaves nothing behind: its text is in no table
afterwards (the full-text index's data included), its vectors are gone from
the database and from what any process keeps, the automatic summary row that
covered it is written again without it and its revisions are gone, a curated
row is kept and says it needs review; and one deletion costs the same number
of queries however long the session is."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from sessions_app import semantic
from sessions_app.history import episode_delete
from sessions_app.models import ChatSession, EpisodeVector
from sessions_app.semantic import neighbours
from summaries import run_state
from summaries.forgetting import exchanges_deleted
from summaries.models import SummarizationState, Summary, SummaryIndex, SummaryRevision
from summaries.store import Source
from tests.factories import ChatSessionFactory, EpisodeFactory, SummaryFactory

pytestmark = pytest.mark.django_db(transaction=True)

MARKER = "qzxjvwmarker"  # a word no stemmer changes


def tables_holding(word: str) -> list[str]:
    """Every table whose rows hold ``word``'s bytes. FTS5 segments store a
    term after the one before it by the suffix they do not share, so its
    shadow tables are searched for the word less its first letter."""
    found = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor, include_views=False):
            needle = (word[1:] if "_fts" in table else word).encode()
            cursor.execute(f'SELECT * FROM "{table}"')
            for row in cursor.fetchall():
                if any(needle in _bytes(value) for value in row if value is not None):
                    found.append(table)
                    break
    return found


def _bytes(value) -> bytes:
    if isinstance(value, (bytes, memoryview)):
        return bytes(value)
    return str(value).encode()


def write(api_client, session, user_input: str, response: str, key: str | None = None) -> dict:
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key else {}
    answer = api_client.post(
        f"/api/sessions/{session.uuid}/episodes/",
        {"user_input": user_input, "response": response},
        format="json",
        **headers,
    )
    assert answer.status_code == 201
    return answer.json()


@pytest.fixture
def semantic_on(settings):
    settings.CONTEXT_SEMANTIC_CANDIDATES = 5000


def test_a_deleted_exchange_is_in_no_table(api_client, session, semantic_on):
    for n in range(6):
        write(api_client, session, f"I planted tomato bed {n} today.", f"Tomato bed {n} noted, water it well.")
    marked = write(
        api_client, session, f"My locker code is {MARKER} remember it.", f"Noted: {MARKER}.", key="k-1"
    )
    for n in range(3):
        write(api_client, session, f"The cat ate breakfast {n}.", f"Good cat {n}.")
    first = ChatSession.objects.get(pk=session.pk)
    assert EpisodeVector.objects.filter(episode_id=marked["id"]).exists()
    ids = list(session.episodes.order_by("pk").values_list("pk", flat=True))
    row = SummaryFactory(
        session=session,
        first_episode_id=ids[0],
        last_episode_id=ids[7],
        content=f"The user planted tomatoes and keeps the locker code {MARKER}.",
    )
    SummaryRevision.objects.create(
        summary=row, source=Source.AUTOMATIC, content=f"Earlier: code {MARKER}.",
        first_episode_id=ids[0], last_episode_id=ids[6],
    )  # fmt: skip
    assert SummaryIndex.objects.filter(summary=row).exists()  # written after commit, from its text
    assert set(tables_holding(MARKER)) >= {
        "sessions_app_episode", "summaries_summary", "summaries_summaryrevision", "summaries_summaryindex",
        "sessions_app_idempotencykey",
    }  # fmt: skip
    if connection.vendor == "sqlite":
        assert any("_fts" in t for t in tables_holding(MARKER))

    assert api_client.delete(f"/api/sessions/{session.uuid}/episodes/{marked['id']}/").status_code == 204

    assert tables_holding(MARKER) == []
    assert not EpisodeVector.objects.filter(episode_id=marked["id"]).exists()
    # The row was written again (offline: extractive) from the exchanges left in its range.
    rewritten = Summary.objects.get(pk=row.pk)
    assert rewritten.content and "tomato" in rewritten.content.lower()
    assert ChatSession.objects.get(pk=session.pk).history_revision == first.history_revision + 1
    context = api_client.get(f"/api/sessions/{session.uuid}/context/", {"question": "What is my locker code?"})
    assert context.status_code == 200 and MARKER not in context.json()["prompt"]


def test_no_process_compares_a_question_with_a_deleted_exchange(session, semantic_on):
    episodes = [EpisodeFactory(session=session, user_input=f"Fact {n} about gardens.") for n in range(4)]
    semantic.embed_pending(session.pk)
    vector = semantic.question_vector("gardens")

    def compared(revision: int) -> set[int]:
        found = semantic.closeness(
            session_pk=session.pk, newest_episode_id=episodes[-1].pk, vector=vector, scan=100, revision=revision
        )
        return set(found.ids.tolist())

    assert episodes[1].pk in compared(0)
    kept = dict(neighbours._cache)  # what another process holds
    episode_delete(session=session, episode_pk=episodes[1].pk)
    neighbours._cache.update(kept)
    revision = ChatSession.objects.get(pk=session.pk).history_revision
    assert revision == 1
    assert episodes[1].pk not in compared(revision)


def test_a_curated_row_is_kept_flagged_and_its_automatic_revisions_go(api_client, session):
    episodes = EpisodeFactory.create_batch(3, session=session)
    row = SummaryFactory(
        session=session, first_episode_id=episodes[0].pk, last_episode_id=episodes[2].pk,
        content=f"A person's text about {MARKER}.", curated=True,
    )  # fmt: skip
    machine = SummaryRevision.objects.create(
        summary=row, source=Source.AUTOMATIC, content=f"auto {MARKER}",
        first_episode_id=episodes[0].pk, last_episode_id=episodes[1].pk,
    )  # fmt: skip
    assert api_client.delete(f"/api/sessions/{session.uuid}/episodes/{episodes[1].pk}/").status_code == 204
    kept = api_client.get(f"/api/summaries/{row.pk}/").json()
    assert kept["content"] == row.content
    assert kept["needs_review"] is True and "Exchange 2" in kept["review_note"]
    assert not SummaryRevision.objects.filter(pk=machine.pk).exists()
    edited = api_client.patch(f"/api/summaries/{row.pk}/", {"content": "Reviewed."}, format="json")
    assert edited.status_code == 200 and edited.json()["needs_review"] is False


def test_a_row_left_with_no_exchange_goes_and_coverage_follows(session):
    episodes = EpisodeFactory.create_batch(3, session=session)
    SummaryFactory(session=session, first_episode_id=episodes[0].pk, last_episode_id=episodes[1].pk)
    last = SummaryFactory(session=session, first_episode_id=episodes[2].pk, last_episode_id=episodes[2].pk)
    episode_delete(session=session, episode_pk=episodes[2].pk)
    assert not Summary.objects.filter(pk=last.pk).exists()
    state = SummarizationState.objects.get(session=session)
    assert (state.covered_through, state.covered_episodes) == (episodes[1].pk, 2)


def test_a_run_in_flight_loses_its_lease(session):
    episodes = EpisodeFactory.create_batch(2, session=session)
    assert run_state.claim(session.pk, "worker-1")
    episode_delete(session=session, episode_pk=episodes[0].pk)
    assert not run_state.hold(session.pk, "worker-1")  # its store would drop the result
    assert run_state.release(session.pk, "worker-1") is run_state.Release.LOST


def _deletion_queries(session, count: int) -> int:
    """Queries of deleting the third exchange of a session of ``count``,
    covered by an automatic row (the write path summarized it); the work
    queued after the commit (the row's regeneration) is not the request's."""
    episodes = EpisodeFactory.create_batch(count, session=session)
    target = episodes[2].pk
    assert Summary.objects.filter(
        session=session, first_episode_id__lte=target, last_episode_id__gte=target, curated=False
    ).exists()
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        episode_delete(session=session, episode_pk=target)
    return len(queries)


def test_one_deletion_costs_the_same_in_a_long_session(owner):
    short = _deletion_queries(ChatSessionFactory(owner=owner), 15)
    long = _deletion_queries(ChatSessionFactory(owner=owner), 150)
    assert short == long


def test_an_offline_reply_that_quoted_a_deleted_exchange_keeps_no_trace_of_it(api_client, session):
    """An offline reply keeps what it quotes by reference: once the quoted
    exchange is deleted its text is in no table, and the reply shows it no more."""
    EpisodeFactory(session=session, user_input="I started learning the cello.", response="Lovely.")
    marked = EpisodeFactory(
        session=session, user_input=f"My locker code is {MARKER} at the gym.", response=f"Noted: {MARKER}."
    )
    for n in range(40):  # longer than a context holds whole: it retrieves and summarizes
        EpisodeFactory(session=session, user_input=f"Note {n}: the weekend plans stand.", response="Fine.")
    question = {"message": "What is my locker code at the gym?"}
    chatted = api_client.post(
        f"/api/sessions/{session.uuid}/chat/", question, format="json", HTTP_IDEMPOTENCY_KEY="chat-1"
    )
    assert chatted.status_code == 201, chatted.content
    reply = chatted.json()["episode"]
    memory = reply["metadata"]["offline_memory"]
    assert MARKER in memory["retrieved"][0]["text"] and MARKER in memory["retrieved"][0]["reply"]
    assert MARKER in memory["summary"]  # the summary row of the first exchanges quotes it too
    assert {"sessions_app_episode", "sessions_app_idempotencykey"} <= set(tables_holding(MARKER))
    assert MARKER not in str(session.episodes.get(pk=reply["id"]).metadata)  # references, not text

    assert api_client.delete(f"/api/sessions/{session.uuid}/episodes/{marked.pk}/").status_code == 204

    assert tables_holding(MARKER) == []
    shown = api_client.get(f"/api/sessions/{session.uuid}/episodes/{reply['id']}/").json()["metadata"]
    assert MARKER not in str(shown)
    labels = [item["label"] for item in shown["offline_memory"]["retrieved"]]
    assert memory["retrieved"][0]["label"] not in labels
    page = api_client.get(f"/api/sessions/{session.uuid}/episodes/", {"newest": 5}).json()["results"]
    assert reply["id"] in [e["id"] for e in page] and MARKER not in str(page)


def _forget_many(owner, per_row: int) -> tuple[int, ChatSession, list]:
    """Queries of ``exchanges_deleted`` for ``per_row`` deleted exchanges in
    each of three rows (two automatic, one curated, each with a revision of
    its range), in the deleting transaction; and the session and its rows."""
    session = ChatSessionFactory(owner=owner)
    episodes = EpisodeFactory.create_batch(24, session=session)
    Summary.objects.filter(session=session).delete()  # rows the write path made: these are placed by hand
    rows = [
        SummaryFactory(
            session=session,
            first_episode_id=episodes[8 * n].pk,
            last_episode_id=episodes[8 * n + 7].pk,
            curated=n == 2,
            content=f"Row {n} {MARKER}.",
        )
        for n in range(3)
    ]
    for row in rows:
        SummaryRevision.objects.create(
            summary=row, source=Source.AUTOMATIC, content=f"auto {MARKER}",
            first_episode_id=row.first_episode_id, last_episode_id=row.last_episode_id,
        )  # fmt: skip
    gone = [(e.pk, e.position) for n in range(3) for e in episodes[8 * n + 1 : 8 * n + 1 + per_row]]
    with transaction.atomic():
        session.episodes.filter(pk__in=[pk for pk, _ in gone]).delete()
        with CaptureQueriesContext(connection) as queries:
            exchanges_deleted(session_pk=session.pk, episodes=gone)
    return len(queries), session, rows


def test_deleting_many_exchanges_costs_what_deleting_few_does(owner):
    """A fixed number of queries however many exchanges went (each went alone before)."""
    few, _, _ = _forget_many(owner, 1)
    many, session, rows = _forget_many(owner, 5)
    assert few == many == 9, (few, many)
    automatic = Summary.objects.filter(pk__in=[rows[0].pk, rows[1].pk])
    # Written again after the commit (offline: extractive) from the exchanges left in their ranges.
    assert [(MARKER in r.content, r.first_position, r.last_position) for r in automatic.order_by("pk")] == [
        (False, 1, 8), (False, 9, 16),
    ]  # fmt: skip
    curated = Summary.objects.get(pk=rows[2].pk)
    assert curated.content == f"Row 2 {MARKER}." and "Exchanges 18, 19, 20, 21 and 22" in curated.review_note
    assert not SummaryRevision.objects.filter(summary__session=session, content__contains=MARKER).exists()
    state = SummarizationState.objects.get(session=session)
    assert (state.covered_through, state.covered_episodes) == (rows[2].last_episode_id, 24 - 15)


def test_rows_left_with_no_exchange_go_in_one_deletion(session):
    episodes = EpisodeFactory.create_batch(6, session=session)
    Summary.objects.filter(session=session).delete()
    first = SummaryFactory(session=session, first_episode_id=episodes[0].pk, last_episode_id=episodes[1].pk)
    SummaryFactory(session=session, first_episode_id=episodes[2].pk, last_episode_id=episodes[3].pk)
    SummaryFactory(session=session, first_episode_id=episodes[4].pk, last_episode_id=episodes[5].pk)
    gone = [(e.pk, e.position) for e in episodes[2:]]
    with transaction.atomic():
        session.episodes.filter(pk__in=[pk for pk, _ in gone]).delete()
        exchanges_deleted(session_pk=session.pk, episodes=gone)
    assert list(Summary.objects.filter(session=session).values_list("pk", flat=True)) == [first.pk]
    state = SummarizationState.objects.get(session=session)
    assert (state.covered_through, state.covered_episodes) == (episodes[1].pk, 2)

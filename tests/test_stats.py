"""The stats queryset: correct figures, one query for a list, and counters
on the session row that always equal the aggregate over the episodes
(``with_aggregate_stats``), after single, concurrent, bulk and imported
writes and deletes."""

from __future__ import annotations

import threading
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from sessions_app.models import ChatSession, Episode
from sessions_app.services import episode_create, episodes_bulk_create, session_delete
from sessions_app.transcripts import parse_transcript, transcript_import
from sessions_app.tokens import count_episode_tokens
from tests.factories import ChatSessionFactory, EpisodeFactory
from tests.process_support import require_or_skip

pytestmark = pytest.mark.django_db


def test_with_stats_figures():
    session = ChatSessionFactory()
    episodes = EpisodeFactory.create_batch(3, session=session)
    row = ChatSession.objects.with_stats().get(pk=session.pk)
    assert row.episode_count == 3
    assert row.total_tokens == sum(e.token_count for e in episodes) > 0
    assert row.last_episode_id == episodes[-1].pk


def test_with_stats_empty_session():
    session = ChatSessionFactory()
    row = ChatSession.objects.with_stats().get(pk=session.pk)
    assert (row.episode_count, row.total_tokens, row.last_episode_id) == (0, 0, None)


def test_with_stats_lists_sessions_in_one_query():
    for n in range(5):
        session = ChatSessionFactory()
        EpisodeFactory.create_batch(n, session=session)
    with CaptureQueriesContext(connection) as ctx:
        rows = list(ChatSession.objects.with_stats())
    assert len(ctx.captured_queries) == 1
    assert sorted(r.episode_count for r in rows) == [0, 1, 2, 3, 4]


def test_stats_for_matches_the_aggregate():
    session = ChatSessionFactory()
    EpisodeFactory.create_batch(4, session=session)
    row = ChatSession.objects.with_aggregate_stats().get(pk=session.pk)
    with CaptureQueriesContext(connection) as ctx:
        stats = ChatSession.objects.stats_for(session.pk)
    assert len(ctx.captured_queries) == 1
    assert stats == {
        "episode_count": row.episode_count,
        "total_tokens": row.total_tokens,
        "last_episode_id": row.last_episode_id,
    }


def test_stats_for_empty_session():
    session = ChatSessionFactory()
    assert ChatSession.objects.stats_for(session.pk) == {
        "episode_count": 0,
        "total_tokens": 0,
        "last_episode_id": None,
    }


def test_episode_create_counts_tokens_and_bumps_counters():
    session = ChatSessionFactory()
    episode = episode_create(session=session, user_input="hello world", response="hi there, friend")
    assert episode.token_count == count_episode_tokens("hello world", "hi there, friend")
    session.refresh_from_db()
    assert session.cached_episode_count == 1
    assert session.cached_total_tokens == episode.token_count


def test_uuid_is_the_external_id():
    a, b = ChatSessionFactory(), ChatSessionFactory()
    assert a.uuid != b.uuid
    assert isinstance(a.pk, int)


@pytest.mark.django_db(transaction=True)
def test_counters_equal_aggregate_after_concurrent_writes():
    if connection.vendor != "postgresql":
        require_or_skip("SQLite serializes writers; the race needs PostgreSQL")
    session = ChatSessionFactory()
    writers, per_writer = 6, 15
    errors: list[BaseException] = []
    barrier = threading.Barrier(writers)

    def write(n: int) -> None:
        try:
            barrier.wait()
            for i in range(per_writer):
                episode_create(session=session, user_input=f"writer {n} message {i}", response="ok " * (n + i))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []

    row = ChatSession.objects.with_aggregate_stats().get(pk=session.pk)
    assert row.episode_count == writers * per_writer
    assert row.cached_episode_count == row.episode_count
    assert row.cached_total_tokens == row.total_tokens
    assert row.cached_last_episode_id == row.last_episode_id
    # Ids were handed out in commit order under the session's row lock, and
    # positions with them: every writer got its own, with no gap.
    rows = list(Episode.objects.for_session(session.pk).values_list("pk", "position"))
    ids = [pk for pk, _ in rows]
    assert ids == sorted(ids)
    assert [position for _, position in rows] == list(range(1, writers * per_writer + 1))
    assert row.cached_last_position == writers * per_writer


def counters_of(session: ChatSession) -> tuple[int, int, int | None]:
    fresh = ChatSession.objects.get(pk=session.pk)
    return fresh.cached_episode_count, fresh.cached_total_tokens, fresh.cached_last_episode_id


def aggregate_of(session: ChatSession) -> tuple[int, int, int | None]:
    row = ChatSession.objects.with_aggregate_stats().get(pk=session.pk)
    return row.episode_count, row.total_tokens, row.last_episode_id


def test_counters_equal_aggregate_after_bulk_writes_and_imports(owner):
    session = ChatSessionFactory(owner=owner)
    EpisodeFactory.create_batch(3, session=session)
    episodes_bulk_create(session=session, items=[{"user_input": f"q{n}", "response": "a " * n} for n in range(40)])
    assert counters_of(session) == aggregate_of(session)

    transcript = parse_transcript(
        [b'{"type": "session", "format": "nexus-transcript/1", "title": "t"}']
        + [f'{{"user_input": "q{n}", "response": "a"}}'.encode() for n in range(25)]
    )
    imported = transcript_import(owner=owner, transcript=transcript)
    assert counters_of(imported) == aggregate_of(imported)
    assert counters_of(imported)[0] == 25


def test_deleting_a_session_leaves_the_others_counters_alone(owner):
    kept, gone = ChatSessionFactory(owner=owner), ChatSessionFactory(owner=owner)
    EpisodeFactory.create_batch(3, session=kept)
    EpisodeFactory.create_batch(4, session=gone)
    session_delete(session=gone)
    assert counters_of(kept) == aggregate_of(kept)
    assert not Episode.objects.filter(session_id=gone.pk).exists()


def test_check_session_counters_finds_and_repairs_a_drift(owner):
    session = ChatSessionFactory(owner=owner)
    EpisodeFactory.create_batch(3, session=session)
    healthy = ChatSessionFactory(owner=owner)
    EpisodeFactory.create_batch(2, session=healthy)
    ChatSession.objects.filter(pk=session.pk).update(cached_episode_count=99, cached_last_episode_id=None)
    out = StringIO()
    with pytest.raises(CommandError):
        call_command("check_session_counters", stdout=out)
    assert str(session.uuid) in out.getvalue() and str(healthy.uuid) not in out.getvalue()
    call_command("check_session_counters", "--fix", stdout=StringIO())
    assert counters_of(session) == aggregate_of(session)
    call_command("check_session_counters", stdout=StringIO())  # clean now: no error

"""The stats queryset: correct figures, one query for a list, and counters
on the session row that always equal the aggregate."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from sessions_app.models import ChatSession, Episode
from sessions_app.services import episode_create
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
    row = ChatSession.objects.with_stats().get(pk=session.pk)
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

    row = ChatSession.objects.with_stats().get(pk=session.pk)
    assert row.episode_count == writers * per_writer
    assert row.cached_episode_count == row.episode_count
    assert row.cached_total_tokens == row.total_tokens
    # Ids were handed out in commit order under the session's row lock.
    ids = list(Episode.objects.for_session(session.pk).values_list("pk", flat=True))
    assert ids == sorted(ids)

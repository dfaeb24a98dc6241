"""Per-session episode reads use the (session, id) index even for a session
that dominates the table, where PostgreSQL would otherwise walk the primary key."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.models import F

from sessions_app.models import ChatSession, Episode
from tests.factories import ChatSessionFactory, EpisodeFactory
from tests.process_support import require_or_skip

pytestmark = pytest.mark.django_db


def _bulk(session: ChatSession, n: int) -> None:
    start = ChatSession.objects.get(pk=session.pk).cached_last_position
    Episode.objects.bulk_create(
        Episode(
            session=session, owner_id=session.owner_id, position=start + k, user_input="q", response="a",
            token_count=2,
        )  # fmt: skip
        for k in range(1, n + 1)
    )
    ChatSession.objects.filter(pk=session.pk).update(
        cached_episode_count=F("cached_episode_count") + n,
        cached_total_tokens=F("cached_total_tokens") + 2 * n,
        cached_last_position=F("cached_last_position") + n,
    )


def test_for_session_and_after_filter_and_order():
    a, b = ChatSessionFactory(), ChatSessionFactory()
    a_eps = [EpisodeFactory(session=a) for _ in range(3)]
    EpisodeFactory(session=b)
    assert list(Episode.objects.for_session(a.pk)) == a_eps
    assert list(Episode.objects.after(a.pk, a_eps[0].pk)) == a_eps[1:]


def test_dominant_session_reads_use_the_session_index():
    if connection.vendor != "postgresql":
        require_or_skip("about PostgreSQL's planner")
    big = ChatSessionFactory()
    _bulk(big, 20_000)  # older than everything below and most of the table
    for _ in range(60):
        _bulk(ChatSessionFactory(), 100)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE sessions_app_episode")

    last_eight = Episode.objects.for_session(big.pk).newest_first()[:8]
    tail = Episode.objects.after(big.pk, 0)[:50]
    for qs in (last_eight, tail):
        plan = qs.explain()
        assert "episode_session_id_idx" in plan, plan

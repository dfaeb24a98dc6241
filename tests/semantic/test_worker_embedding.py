"""Vectors end to end: PostgreSQL, Redis and real Celery worker processes."""

from __future__ import annotations

import pytest

from sessions_app.models import EpisodeVector
from sessions_app.services import episode_create, episodes_bulk_create
from summaries.context import build_context
from tests.factories import ChatSessionFactory
from tests.integration_support import (  # noqa: F401 - fixtures
    live_database,
    own_redis,
    redis_url,
    wait_until,
    worker_fleet,
)

pytestmark = [pytest.mark.integration]

#: A recent window's worth of exchanges (CONTEXT_RECENT_EPISODES's default).
WINDOW = 8


def test_workers_encode_what_is_written_and_the_context_finds_it_by_meaning(
    semantic, worker_fleet, fake_model_process, owner
):
    fleet = worker_fleet(2, model_url=fake_model_process.url)
    session = ChatSessionFactory(owner=owner)
    episode_create(
        session=session, user_input="The wifi password at the cabin is heron42.", response="Noted."
    )
    for n in range(WINDOW * 5 - 1):
        episode_create(session=session, user_input=f"Message {n}: what should I cook?", response="A risotto.")
    episodes_bulk_create(
        session=session,
        items=[{"user_input": f"Bulk {n} about the weather.", "response": "Mild."} for n in range(7)],
    )
    wait_until(
        lambda: EpisodeVector.objects.filter(session=session).count() == WINDOW * 5 + 7,
        timeout=90,
        message=f"the workers to encode every episode\n{fleet.logs()}",
    )
    session.refresh_from_db()
    result = build_context(
        session=session, question="What do I type to get online when we stay at the lake house?", budget=400
    )
    assert "heron42" in result.prompt
    assert result.retrieved and min(result.retrieved) == session.episodes.order_by("pk").first().pk

"""Episode positions: each exchange's number in its session (1, 2, 3, ...),
given in the write transaction from a counter on the session that only
grows, so a deleted exchange leaves a gap and no number is given twice;
and summary rows named by the positions of the range they cover."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from sessions_app.errors import EpisodeDateInvalid
from sessions_app.models import ChatSession, Episode
from sessions_app.services import (
    episode_create,
    episode_create_for_user,
    episodes_bulk_create,
    session_counters_repair,
)
from summaries.curation import summary_curate, summary_restore
from summaries.models import SummarizationState, Summary
from summaries.ranges import summary_create_for_range
from tests.factories import ChatSessionFactory, EpisodeFactory, SummaryFactory

pytestmark = pytest.mark.django_db


def positions(session: ChatSession) -> list[int]:
    return list(Episode.objects.for_session(session.pk).values_list("position", flat=True))


def last_position(session: ChatSession) -> int:
    return ChatSession.objects.get(pk=session.pk).cached_last_position


def test_single_writes_count_from_one_per_session(owner):
    a, b = ChatSessionFactory(owner=owner), ChatSessionFactory(owner=owner)
    made = [
        episode_create(session=a, user_input="a1", response="r"),
        episode_create(session=b, user_input="b1", response="r"),
        episode_create(session=a, user_input="a2", response="r"),
        episode_create_for_user(user=owner, session_uuid=a.uuid, user_input="a3", response="r"),
        episode_create_for_user(user=owner, session_uuid=b.uuid, user_input="b2", response="r"),
    ]
    # The returned episodes carry their positions (the API answers with them).
    assert [e.position for e in made] == [1, 1, 2, 3, 2]
    assert positions(a) == [1, 2, 3] and positions(b) == [1, 2]
    assert last_position(a) == 3 and last_position(b) == 2


def test_a_bulk_write_takes_the_next_positions_in_order(session):
    EpisodeFactory.create_batch(2, session=session)
    created = episodes_bulk_create(
        session=session, items=[{"user_input": f"q{n}", "response": "a"} for n in range(5)]
    )
    assert [e.position for e in created] == [3, 4, 5, 6, 7]
    assert positions(session) == list(range(1, 8))
    assert episode_create(session=session, user_input="after", response="a").position == 8


def test_a_deleted_exchange_leaves_a_gap_and_its_number_is_not_given_again(session):
    first, second, third = EpisodeFactory.create_batch(3, session=session)
    third.delete()
    assert episode_create(session=session, user_input="next", response="a").position == 4
    second.delete()
    created = episodes_bulk_create(session=session, items=[{"user_input": "q", "response": "a"}] * 2)
    assert [e.position for e in created] == [5, 6]
    assert positions(session) == [1, 4, 5, 6]
    # Repairing the counters brings the count down, never the position counter.
    session_counters_repair(session_pk=session.pk)
    fresh = ChatSession.objects.get(pk=session.pk)
    assert (fresh.cached_episode_count, fresh.cached_last_position) == (4, 6)


def test_repair_raises_a_position_counter_that_fell_behind(session):
    EpisodeFactory.create_batch(3, session=session)
    ChatSession.objects.filter(pk=session.pk).update(cached_last_position=1)
    session_counters_repair(session_pk=session.pk)
    assert last_position(session) == 3
    assert episode_create(session=session, user_input="q", response="a").position == 4


def test_a_refused_write_uses_up_no_position(session):
    episode = EpisodeFactory(session=session)
    with pytest.raises(EpisodeDateInvalid):
        episode_create(
            session=session, user_input="q", response="a", created_at=episode.created_at.replace(year=2000)
        )
    with pytest.raises(RuntimeError), transaction.atomic():
        episode_create(session=session, user_input="rolled back", response="a")
        raise RuntimeError
    assert episode_create(session=session, user_input="q", response="a").position == 2


def test_a_position_is_unique_in_its_session(session):
    episode = EpisodeFactory(session=session)
    other = ChatSessionFactory(owner=session.owner)
    owner = session.owner
    Episode.objects.create(
        session=other, owner=owner, position=episode.position, user_input="q", response="a"
    )
    with pytest.raises(IntegrityError), transaction.atomic():
        Episode.objects.create(
            session=session, owner=owner, position=episode.position, user_input="q", response="a"
        )


def test_the_admin_names_an_episode_by_its_position_and_session_title(session):
    EpisodeFactory(session=session)
    episode = EpisodeFactory(session=session)
    assert str(episode) == f"#2 of “{session.title}”"


# --- summary rows ---------------------------------------------------------------------


def test_a_summary_row_names_its_range_by_positions(session, staff_user):
    episodes = EpisodeFactory.create_batch(6, session=session)
    first_id = episodes[0].pk
    episodes[0].delete()  # the range's ends are the positions of the episodes it holds
    row = SummaryFactory(session=session, first_episode_id=first_id, last_episode_id=episodes[3].pk)
    assert (row.first_position, row.last_position) == (2, 4)
    assert str(row) == f"Exchanges 2–4 of “{session.title}”"
    single = SummaryFactory(session=session, first_episode_id=episodes[4].pk, last_episode_id=episodes[4].pk)
    assert single.exchanges == "Exchange 5"

    summary_curate(summary=row, content="Edited.", actor=staff_user)
    revision = row.revisions.get()
    assert (revision.first_position, revision.last_position) == (2, 4)
    assert str(revision) == f"Exchanges 2–4 of “{session.title}” before the staff edit"
    state = SummarizationState.objects.get(session=session)
    assert str(state) == f"Idle (“{session.title}”)"


def test_a_restored_range_takes_its_positions_back(session, staff_user):
    episodes = EpisodeFactory.create_batch(5, session=session)
    row = SummaryFactory(session=session, first_episode_id=episodes[0].pk, last_episode_id=episodes[1].pk)
    summary_curate(summary=row, content="Edited.", actor=staff_user)
    locked = Summary.objects.get(pk=row.pk)
    locked.cover(first_episode_id=episodes[0].pk, last_episode_id=episodes[4].pk)
    locked.save()
    assert (locked.first_position, locked.last_position) == (1, 5)

    restored = summary_restore(revision=row.revisions.get(), actor=staff_user)
    assert (restored.first_position, restored.last_position) == (1, 2)
    assert Summary.objects.get(pk=row.pk).exchanges == "Exchanges 1–2"


def test_a_manual_row_gets_its_positions(session):
    episodes = EpisodeFactory.create_batch(4, session=session)
    row = summary_create_for_range(
        session=session, content="By hand.", first_episode_id=episodes[1].pk, last_episode_id=episodes[2].pk
    )
    assert Summary.objects.get(pk=row.pk).exchanges == "Exchanges 2–3"

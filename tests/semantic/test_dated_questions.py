"""A question that names a date ("last week", "in May", "on 8 May 2023")
lifts the exchanges written then, resolved against when it is asked
(``asked_at``)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from sessions_app.semantic import embed_pending
from sessions_app.services import episodes_bulk_create
from summaries.context import build_context

pytestmark = pytest.mark.django_db

FIRST = datetime(2023, 3, 1, 18, 0, tzinfo=timezone.utc)
QUESTION = "What did I tell you about the garden last week?"


@pytest.fixture
def garden_session(session):
    """60 days, one exchange a day, each about the garden, alike but for its number."""
    items = [
        {
            "user_input": f"Day {n} in the garden: I planted row {n} of something and watered the beds.",
            "response": f"Good work on row {n}; the beds will thank you.",
            "created_at": FIRST + timedelta(days=n),
        }
        for n in range(60)
    ]
    episodes = episodes_bulk_create(session=session, items=items)
    embed_pending(session.pk)
    session.refresh_from_db()
    return session, episodes




def last_week(asked: datetime) -> set[int]:
    """The days of the calendar week before ``asked``'s."""
    monday = (asked - timedelta(days=asked.weekday() + 7)).date()
    sunday = monday + timedelta(days=6)
    return {n for n in range(60) if monday <= (FIRST + timedelta(days=n)).date() <= sunday}


@pytest.mark.parametrize("asked_day", [20, 35])
def test_the_exchanges_of_the_week_named_are_quoted(semantic, garden_session, asked_day):
    session, episodes = garden_session
    asked = FIRST + timedelta(days=asked_day)
    result = build_context(session=session, question=QUESTION, budget=400, asked_at=asked)
    day = {e.pk: n for n, e in enumerate(episodes)}
    # The best ranked are that week's (the choice varies the rest: those days are much alike).
    best = {day[pk] for pk in result.retrieved_by_rank[:3]}
    assert len(best) == 3 and best <= last_week(asked)


def test_without_a_date_the_same_question_is_not_drawn_to_that_week(semantic, garden_session):
    session, episodes = garden_session
    asked = FIRST + timedelta(days=20)
    question = "What did I tell you about the garden?"
    result = build_context(session=session, question=question, budget=400, asked_at=asked)
    day = {e.pk: n for n, e in enumerate(episodes)}
    best = {day[pk] for pk in result.retrieved_by_rank[:3]}
    assert len(best) == 3 and not best <= last_week(asked)

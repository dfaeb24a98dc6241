"""When the task that writes episodes' vectors is sent: once after every
write, bulk or single, never twice for one write (the recent window is a
share of the budget, so an episode can leave it with the next write)."""

from __future__ import annotations

import pytest

from sessions_app.semantic import tasks
from sessions_app.services import episode_create, episodes_bulk_create

pytestmark = pytest.mark.django_db

#: A recent window's worth of exchanges (CONTEXT_RECENT_EPISODES's default).
WINDOW = 8


@pytest.fixture
def sent(monkeypatch) -> list[int]:
    """The sessions the encoding task was sent for, in order."""
    calls: list[int] = []
    monkeypatch.setattr(tasks, "dispatch", lambda task, kwargs: calls.append(kwargs["session_pk"]))
    return calls


def items(count: int) -> list[dict[str, str]]:
    return [{"user_input": f"Question {n}?", "response": f"Answer {n}."} for n in range(count)]


def test_a_bulk_write_sends_it_once_even_when_its_count_is_also_a_single_writes_turn(
    semantic, session, sent, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        episodes_bulk_create(session=session, items=items(WINDOW))
    assert sent == [session.pk]
    with django_capture_on_commit_callbacks(execute=True):
        episodes_bulk_create(session=session, items=items(3))
    assert sent == [session.pk, session.pk]


def test_every_single_write_sends_it_and_a_batch_among_them_once(
    semantic, session, sent, django_capture_on_commit_callbacks
):
    for n in range(2 * WINDOW):
        with django_capture_on_commit_callbacks(execute=True):
            episode_create(session=session, user_input=f"Question {n}?", response="Answer.")
    assert sent == [session.pk] * (2 * WINDOW)
    # One transaction writing singly and in bulk checks once, and sends once.
    with django_capture_on_commit_callbacks(execute=True):
        episode_create(session=session, user_input="One more?", response="Yes.")
        episodes_bulk_create(session=session, items=items(2))
    assert sent == [session.pk] * (2 * WINDOW + 1)


def test_nothing_is_sent_with_retrieval_by_meaning_off(session, sent, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        episodes_bulk_create(session=session, items=items(WINDOW))
    assert sent == []


def test_a_forced_request_beside_a_write_in_one_transaction_still_sends_it_once(
    semantic, session, owner, sent, django_capture_on_commit_callbacks, monkeypatch
):
    from summaries import tasks as summary_tasks
    from summaries.triggers import session_summarize_now

    runs = []
    monkeypatch.setattr(summary_tasks, "send_task", lambda task, **kwargs: runs.append(kwargs) or True)
    with django_capture_on_commit_callbacks(execute=True):
        episodes_bulk_create(session=session, items=items(WINDOW))
        session_summarize_now(session=session, actor=owner)
    assert runs  # the forced run went out
    assert sent == [session.pk]

"""Every episode write extends the history fingerprint of a session that
keeps one, to the value its whole history gives; others keep none."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from sessions_app.history_fingerprint import EMPTY, history_fingerprint
from sessions_app.models import ChatSession
from sessions_app.services import (
    episode_create,
    episode_create_for_user,
    episodes_bulk_create,
    session_create,
)

pytestmark = pytest.mark.django_db

HISTORY = [
    ("My dog is called Rex.", "A fine name."),
    ("He is four years old.", "Young still."),
    ("What is his name?", "Rex."),
]


def _stored(session: ChatSession) -> str | None:
    return ChatSession.objects.values_list("history_fingerprint", flat=True).get(pk=session.pk)


def test_every_write_path_gives_the_value_of_the_whole_history(owner):
    session = session_create(owner=owner, keeps_fingerprint=True)
    assert _stored(session) == EMPTY
    episodes_bulk_create(session=session, items=[{"user_input": q, "response": a} for q, a in HISTORY[:1]])
    assert _stored(session) == history_fingerprint(HISTORY[:1])
    # The single write of the chat pages, then the fused statement API clients take (PostgreSQL).
    episode_create(session=session, user_input=HISTORY[1][0], response=HISTORY[1][1])
    assert _stored(session) == history_fingerprint(HISTORY[:2])
    episode_create_for_user(
        user=owner, session_uuid=session.uuid, user_input=HISTORY[2][0], response=HISTORY[2][1]
    )
    assert _stored(session) == history_fingerprint(HISTORY)
    assert _stored(session) != history_fingerprint(HISTORY[:2])


def test_a_bulk_write_chains_in_order_and_whitespace_is_compared_collapsed(owner):
    session = session_create(owner=owner, keeps_fingerprint=True)
    episodes_bulk_create(session=session, items=[{"user_input": q, "response": a} for q, a in HISTORY])
    assert _stored(session) == history_fingerprint(HISTORY)
    assert history_fingerprint([(" My dog is  called\nRex. ", "A fine name.\n"), *HISTORY[1:]]) == _stored(
        session
    )
    assert history_fingerprint(list(reversed(HISTORY))) != _stored(session)
    # The texts are kept apart: moving words across the pair is another history.
    assert history_fingerprint([("a b", "c")]) != history_fingerprint([("a", "b c")])


def test_sessions_that_keep_none_stay_without(owner):
    session = session_create(owner=owner)
    episode_create(session=session, user_input="Hi", response="Hello")
    episode_create_for_user(user=owner, session_uuid=session.uuid, user_input="Again", response="Yes")
    episodes_bulk_create(session=session, items=[{"user_input": "More", "response": "Sure"}])
    assert _stored(session) is None


def test_a_deleted_or_filled_in_exchange_and_a_clear_move_the_fingerprint_with_the_history(owner):
    from sessions_app.history import episode_delete, episode_reply_fill, session_history_clear

    session = session_create(owner=owner, keeps_fingerprint=True)
    stored = episodes_bulk_create(
        session=session, items=[{"user_input": q, "response": a} for q, a in HISTORY]
    )
    episode_delete(session=session, episode_pk=stored[1].pk)
    assert _stored(session) == history_fingerprint([HISTORY[0], HISTORY[2]])
    pending = episode_create(session=session, user_input="And his breed?", response="")
    episode_reply_fill(session=session, episode_pk=pending.pk, response="A beagle.")
    assert _stored(session) == history_fingerprint([HISTORY[0], HISTORY[2], ("And his breed?", "A beagle.")])
    session_history_clear(session=session)
    assert _stored(session) == EMPTY
    plain = session_create(owner=owner)
    kept = episode_create(session=plain, user_input="Hi", response="Hello")
    episode_delete(session=plain, episode_pk=kept.pk)
    assert _stored(plain) is None


def test_a_clear_writes_the_empty_value_without_reading_the_history(owner):
    """A clear knows the empty history's value: it costs what a session keeping none costs."""
    from sessions_app.history import session_history_clear

    def clear_queries(session: ChatSession) -> int:
        episodes_bulk_create(session=session, items=[{"user_input": q, "response": a} for q, a in HISTORY])
        with CaptureQueriesContext(connection) as queries:
            session_history_clear(session=session)
        return len(queries)

    keeping, plain = session_create(owner=owner, keeps_fingerprint=True), session_create(owner=owner)
    assert clear_queries(keeping) == clear_queries(plain)
    assert (_stored(keeping), _stored(plain)) == (EMPTY, None)


def test_a_session_keeping_none_hashes_nothing(monkeypatch):
    from sessions_app import history_fingerprint as fingerprints

    def untouched():
        raise AssertionError("the exchanges were read")
        yield

    monkeypatch.setattr(fingerprints, "exchange_digest", lambda *args: pytest.fail("an exchange was hashed"))
    assert fingerprints.fingerprint_after(None, untouched()) is None

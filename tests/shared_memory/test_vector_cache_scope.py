"""A session's vectors kept in a process are dropped when whose memory it
is changes (its scope or end user): at once in the process that changed
it, and in any other when it next reads them (the kept copy's stamp)."""

from __future__ import annotations

import numpy as np
import pytest

from sessions_app.models import ChatSession
from sessions_app.semantic import embed_pending, neighbours, question_vector
from sessions_app.services import episodes_bulk_create, session_update
from tests.factories import ChatSessionFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def encoded(settings, owner):
    settings.CONTEXT_SEMANTIC_CANDIDATES = 5000
    neighbours.forget()
    session = ChatSessionFactory(owner=owner)
    items = [{"user_input": f"Cooking note {n}.", "response": "Risotto."} for n in range(5)]
    episodes_bulk_create(session=session, items=items)
    embed_pending(session.pk)
    session.refresh_from_db()
    yield session
    neighbours.forget()


def _closeness(session: ChatSession, vector: np.ndarray) -> neighbours.Closeness:
    return neighbours.closeness(
        session_pk=session.pk,
        newest_episode_id=session.cached_last_episode_id,
        vector=vector,
        scan=5000,
        stamp=(session.end_user, session.memory_scope),
    )


def test_kept_vectors_are_reused_while_the_scope_stays(encoded):
    vector = question_vector("risotto")
    _closeness(encoded, vector)
    kept = neighbours._cache[encoded.pk]
    _closeness(encoded, vector)
    assert neighbours._cache[encoded.pk] is kept


def test_a_scope_changed_here_drops_them_at_once(encoded):
    _closeness(encoded, question_vector("risotto"))
    assert encoded.pk in neighbours._cache
    session_update(session=encoded, memory_scope="shared")
    assert encoded.pk not in neighbours._cache


@pytest.mark.parametrize("change", [{"memory_scope": "shared"}, {"end_user": "ann"}])
def test_a_change_made_by_another_process_drops_them_on_the_next_read(encoded, change):
    vector = question_vector("risotto")
    _closeness(encoded, vector)
    kept = neighbours._cache[encoded.pk]
    ChatSession.objects.filter(pk=encoded.pk).update(**change)  # as another process would, unseen here
    encoded.refresh_from_db()
    _closeness(encoded, vector)
    fresh = neighbours._cache[encoded.pk]
    assert fresh is not kept
    assert fresh.stamp == (encoded.end_user, encoded.memory_scope)

"""A write whose acknowledgement the database lost (it crashed after the
``COMMIT``, or after a statement that commits on its own, but before it
answered) may be stored: the 503 says so instead of "nothing was stored",
and a retry with the same ``Idempotency-Key`` gets the stored answer
instead of writing twice."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.db import OperationalError, connection, connections

from sessions_app.models import Episode

pytestmark = pytest.mark.django_db(transaction=True)

EPISODE = {"user_input": "Did it land?", "response": "Perhaps."}
LOST = "server closed the connection unexpectedly"


@contextmanager
def acknowledgements_lost() -> Iterator[None]:
    """Every write of an episode reaches the database, which then fails
    before it answers: after the ``COMMIT`` of a transaction that inserted
    one, or after an insert that commits on its own."""
    wrapper = connections["default"]  # the test client's request runs on this thread's connection
    real_commit = wrapper.commit
    inserted = []

    def commit() -> None:
        real_commit()
        if inserted:
            inserted.clear()
            raise OperationalError(LOST)

    def statement(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if "INSERT INTO" in sql.upper() and "sessions_app_episode" in sql:
            if not connection.in_atomic_block:
                raise OperationalError(LOST)
            inserted.append(sql)
        return result

    wrapper.commit = commit
    try:
        with connection.execute_wrapper(statement):
            yield
    finally:
        del wrapper.commit


def episodes_url(session) -> str:
    return f"/api/sessions/{session.uuid}/episodes/"


def test_a_write_whose_answer_was_lost_does_not_claim_nothing_was_stored(api_client, session):
    with acknowledgements_lost():
        response = api_client.post(episodes_url(session), EPISODE, format="json")
    assert response.status_code == 503
    assert int(response["Retry-After"]) > 0
    assert Episode.objects.filter(session=session).count() == 1  # it was stored
    detail = response.json()["detail"]
    assert "nothing was stored" not in detail
    assert "may or may not have been stored" in detail and "Idempotency-Key" in detail


def test_a_keyed_write_whose_answer_was_lost_is_stored_once(api_client, session):
    with acknowledgements_lost():
        lost = api_client.post(episodes_url(session), EPISODE, format="json", HTTP_IDEMPOTENCY_KEY="w-1")
    assert lost.status_code == 503
    assert "may or may not have been stored" in lost.json()["detail"]
    retried = api_client.post(episodes_url(session), EPISODE, format="json", HTTP_IDEMPOTENCY_KEY="w-1")
    assert retried.status_code == 201 and retried["Idempotent-Replayed"] == "true"
    assert Episode.objects.filter(session=session).count() == 1
    assert retried.json()["id"] == Episode.objects.get(session=session).pk


def test_a_keyed_chat_turn_whose_answer_was_lost_is_answered_once(api_client, session, model):
    url = f"/api/sessions/{session.uuid}/chat/"
    with acknowledgements_lost():
        lost = api_client.post(url, {"message": "Hello?"}, format="json", HTTP_IDEMPOTENCY_KEY="c-1")
    assert lost.status_code == 503
    assert "nothing was stored" not in lost.json()["detail"]
    retried = api_client.post(url, {"message": "Hello?"}, format="json", HTTP_IDEMPOTENCY_KEY="c-1")
    assert retried.status_code == 201 and retried["Idempotent-Replayed"] == "true"
    assert Episode.objects.filter(session=session).count() == 1
    assert retried.json()["reply"] == Episode.objects.get(session=session).response
    assert sum(1 for r in model.requests if r["path"] == "/api/chat") == 1

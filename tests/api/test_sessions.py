"""Sessions: list with stats, create, retrieve, patch, delete; who sees what."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from sessions_app.errors import SessionNotFound
from sessions_app.models import ChatSession
from sessions_app.services import session_update
from summaries.models import SummarizationState
from tests.factories import ChatSessionFactory, EpisodeFactory

pytestmark = pytest.mark.django_db

SESSION_FIELDS = {
    "id",
    "title",
    "metadata",
    "end_user",
    "memory_scope",
    "created_at",
    "updated_at",
    "episode_count",
    "total_tokens",
    "last_episode_id",
    "summary_state",
}


def test_list_shows_own_sessions_with_stats(api_client, session, episodes, other_session):
    response = api_client.get("/api/sessions/")
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 1
    (row,) = body["results"]
    assert set(row) == SESSION_FIELDS
    assert row["id"] == str(session.uuid)
    assert row["episode_count"] == 3
    assert row["total_tokens"] == sum(e.token_count for e in episodes)
    assert row["last_episode_id"] == episodes[-1].pk
    assert row["summary_state"] == "idle"


def test_staff_list_shows_every_session(staff_client, session, other_session):
    ids = {row["id"] for row in staff_client.get("/api/sessions/").json()["results"]}
    assert ids == {str(session.uuid), str(other_session.uuid)}


def test_list_shows_the_summarization_state(api_client, session):
    SummarizationState.objects.create(session=session, state="running")
    (row,) = api_client.get("/api/sessions/").json()["results"]
    assert row["summary_state"] == "running"


def test_list_query_count_does_not_grow_with_rows(api_client, owner):
    def count_queries() -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert api_client.get("/api/sessions/").status_code == 200
        return len(ctx.captured_queries)

    ChatSessionFactory(owner=owner)
    few = count_queries()
    for n in range(6):
        session = ChatSessionFactory(owner=owner)
        EpisodeFactory.create_batch(n % 3, session=session)
        SummarizationState.objects.create(session=session, state="queued")
    # The page count and the page itself, stats and state included.
    assert few == count_queries() == 2


def test_list_is_paginated(api_client, owner, settings):
    settings.API_PAGE_SIZE = 2
    ChatSessionFactory.create_batch(3, owner=owner)
    first = api_client.get("/api/sessions/").json()
    assert first["count"] == 3 and len(first["results"]) == 2 and first["next"]
    second = api_client.get(first["next"]).json()
    assert len(second["results"]) == 1


def test_create(api_client, owner):
    response = api_client.post(
        "/api/sessions/", {"title": "New", "metadata": {"source": "test"}}, format="json"
    )
    assert response.status_code == 201
    body = response.json()
    assert set(body) == SESSION_FIELDS
    assert (body["title"], body["metadata"], body["episode_count"]) == ("New", {"source": "test"}, 0)
    created = ChatSession.objects.get(uuid=body["id"])
    assert created.owner == owner


def test_create_ignores_read_only_fields(api_client):
    chosen = str(uuid.uuid4())
    body = api_client.post("/api/sessions/", {"id": chosen, "episode_count": 7}, format="json").json()
    assert body["id"] != chosen and body["episode_count"] == 0


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"title": "x" * 201}, "title"),
        ({"title": "nul\x00"}, "title"),
        ({"metadata": ["not", "an", "object"]}, "metadata"),
        ({"metadata": {"k": "nul\x00"}}, "metadata"),
    ],
)
def test_create_rejects_bad_fields(api_client, payload, field):
    response = api_client.post("/api/sessions/", payload, format="json")
    assert response.status_code == 400
    assert field in response.json()


def test_metadata_size_limit(api_client, settings):
    settings.API_METADATA_MAX_BYTES = 50
    response = api_client.post("/api/sessions/", {"metadata": {"k": "v" * 60}}, format="json")
    assert response.status_code == 400 and "metadata" in response.json()


def test_malformed_json_is_400(api_client):
    response = api_client.post("/api/sessions/", data='{"title": ', content_type="application/json")
    assert response.status_code == 400


def test_anonymous_is_refused(anon_client, session):
    assert anon_client.get("/api/sessions/").status_code in (401, 403)
    assert anon_client.get(f"/api/sessions/{session.uuid}/").status_code in (401, 403)


def test_retrieve(api_client, session, episodes):
    response = api_client.get(f"/api/sessions/{session.uuid}/")
    assert response.status_code == 200
    assert response.json()["episode_count"] == 3


def test_patch(api_client, session):
    response = api_client.patch(
        f"/api/sessions/{session.uuid}/", {"title": "Renamed", "metadata": {"a": 1}}, format="json"
    )
    assert response.status_code == 200
    session.refresh_from_db()
    assert (session.title, session.metadata) == ("Renamed", {"a": 1})


def test_patch_keeps_fields_not_sent(api_client, session):
    session.metadata = {"keep": True}
    session.save()
    response = api_client.patch(f"/api/sessions/{session.uuid}/", {"title": "Only title"}, format="json")
    assert response.status_code == 200
    session.refresh_from_db()
    assert (session.title, session.metadata) == ("Only title", {"keep": True})


def test_patch_of_a_session_deleted_meanwhile_is_404(owner):
    """Found by the view, then deleted (another tab) before the change was saved."""
    session = ChatSessionFactory(owner=owner, title="Before")
    found = ChatSession.objects.get(pk=session.pk)
    session.delete()
    with pytest.raises(SessionNotFound):
        session_update(session=found, title="After")
    assert not ChatSession.objects.exists()


def test_patch_moves_updated_at(api_client, session):
    before = ChatSession.objects.get(pk=session.pk).updated_at
    body = api_client.patch(f"/api/sessions/{session.uuid}/", {"metadata": {"k": 1}}, format="json").json()
    fresh = ChatSession.objects.get(pk=session.pk)
    assert fresh.updated_at > before
    assert (fresh.title, fresh.metadata) == ("Owned", {"k": 1})
    assert body["metadata"] == {"k": 1}


def test_put_is_not_allowed(api_client, session):
    assert api_client.put(f"/api/sessions/{session.uuid}/", {"title": "x"}, format="json").status_code == 405


def test_delete(api_client, session, episodes):
    assert api_client.delete(f"/api/sessions/{session.uuid}/").status_code == 204
    assert not ChatSession.objects.filter(pk=session.pk).exists()


@pytest.mark.parametrize("bad", ["not-a-uuid", str(uuid.uuid4()), "0" * 40])
def test_unknown_or_malformed_uuid_is_404(api_client, bad):
    assert api_client.get(f"/api/sessions/{bad}/").status_code == 404


@pytest.mark.parametrize(
    ("method", "payload", "ok"),
    [("get", None, 200), ("patch", {"title": "t"}, 200), ("delete", None, 204)],
)
def test_isolation(api_client, other_client, staff_client, session, method, payload, ok):
    url = f"/api/sessions/{session.uuid}/"

    def call(client):
        return getattr(client, method)(url, payload, format="json") if payload else getattr(client, method)(url)

    assert call(other_client).status_code == 404
    assert ChatSession.objects.filter(pk=session.pk).exists()
    assert call(staff_client).status_code == ok
    if method != "delete":
        assert call(api_client).status_code == ok

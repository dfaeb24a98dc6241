"""Whose memory a session is: ``end_user`` and ``memory_scope`` on create,
PATCH and the list's filters."""

from __future__ import annotations

import pytest

from sessions_app.models import ChatSession
from tests.factories import ChatSessionFactory, EpisodeFactory

pytestmark = pytest.mark.django_db


def test_create_defaults_to_the_owner_in_person_and_this_session_only(api_client):
    body = api_client.post("/api/sessions/", {"title": "t"}, format="json").json()
    assert (body["end_user"], body["memory_scope"]) == ("", "session")


def test_create_takes_end_user_and_scope(api_client):
    payload = {"end_user": "cust-42", "memory_scope": "shared"}
    response = api_client.post("/api/sessions/", payload, format="json")
    assert response.status_code == 201
    body = response.json()
    assert (body["end_user"], body["memory_scope"]) == ("cust-42", "shared")
    row = ChatSession.objects.get(uuid=body["id"])
    assert (row.end_user, row.memory_scope) == ("cust-42", "shared")


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"end_user": "x" * 201}, "end_user"),
        ({"end_user": 5 * [1]}, "end_user"),
        ({"end_user": "a\x00b"}, "end_user"),
        ({"memory_scope": "everyone"}, "memory_scope"),
    ],
)
def test_create_refuses_bad_values_by_name(api_client, payload, field):
    response = api_client.post("/api/sessions/", payload, format="json")
    assert response.status_code == 400
    assert field in response.json()
    assert not ChatSession.objects.exists()


def test_end_user_of_200_characters_is_taken(api_client):
    body = api_client.post("/api/sessions/", {"end_user": "é" * 200}, format="json").json()
    assert body["end_user"] == "é" * 200


def test_memory_scope_is_changeable_at_any_time(api_client, session):
    EpisodeFactory(session=session)
    response = api_client.patch(f"/api/sessions/{session.uuid}/", {"memory_scope": "shared"}, format="json")
    assert response.status_code == 200
    assert response.json()["memory_scope"] == "shared"
    session.refresh_from_db()
    assert session.memory_scope == "shared"


def test_end_user_is_changeable_while_the_session_is_empty(api_client, session):
    response = api_client.patch(f"/api/sessions/{session.uuid}/", {"end_user": "cust-1"}, format="json")
    assert response.status_code == 200
    assert response.json()["end_user"] == "cust-1"
    session.refresh_from_db()
    assert session.end_user == "cust-1"


def test_end_user_of_a_session_with_episodes_is_400_naming_it(api_client, session):
    EpisodeFactory(session=session)
    url = f"/api/sessions/{session.uuid}/"
    response = api_client.patch(url, {"end_user": "cust-1", "title": "new"}, format="json")
    assert response.status_code == 400
    assert "end_user" in response.json()
    session.refresh_from_db()
    # Nothing of a refused change is written.
    assert session.end_user == ""
    assert session.title != "new"
    # The same value is no change, and passes with the rest.
    same = api_client.patch(url, {"end_user": "", "title": "new"}, format="json")
    assert same.status_code == 200
    assert same.json()["title"] == "new"


def test_patch_of_end_user_too_long_is_400(api_client, session):
    response = api_client.patch(f"/api/sessions/{session.uuid}/", {"end_user": "x" * 201}, format="json")
    assert response.status_code == 400
    assert "end_user" in response.json()


def _ids(client, query: str) -> set[str]:
    response = client.get(f"/api/sessions/{query}")
    assert response.status_code == 200, response.content
    return {row["id"] for row in response.json()["results"]}


def test_list_filters_by_end_user_and_scope(api_client, owner, other_user):
    mine = ChatSessionFactory(owner=owner)
    ann = ChatSessionFactory(owner=owner, end_user="ann", memory_scope="shared")
    ann_alone = ChatSessionFactory(owner=owner, end_user="ann")
    bob = ChatSessionFactory(owner=owner, end_user="bob", memory_scope="shared")
    ChatSessionFactory(owner=other_user, end_user="ann", memory_scope="shared")
    every = {str(s.uuid) for s in (mine, ann, ann_alone, bob)}
    assert _ids(api_client, "") == every
    assert _ids(api_client, "?end_user=") == {str(mine.uuid)}
    assert _ids(api_client, "?end_user=ann") == {str(ann.uuid), str(ann_alone.uuid)}
    assert _ids(api_client, "?memory_scope=shared") == {str(ann.uuid), str(bob.uuid)}
    assert _ids(api_client, "?end_user=ann&memory_scope=session") == {str(ann_alone.uuid)}


@pytest.mark.parametrize(
    ("query", "field"), [("?memory_scope=all", "memory_scope"), ("?end_user=" + "x" * 201, "end_user")]
)
def test_list_filter_bad_values_are_400_naming_them(api_client, query, field):
    response = api_client.get(f"/api/sessions/{query}")
    assert response.status_code == 400
    assert field in response.json()

"""A key bound to an end user: every call reads and writes only that end
user's sessions, whatever the account's other sessions hold."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from nexus.api.keys.services import key_create
from sessions_app.models import ChatSession
from tests.factories import ChatSessionFactory, EpisodeFactory, SummaryFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def people(owner):
    """Sessions of one account: alice's, bob's and the owner's own, each with an episode."""
    found = {}
    for end_user in ("alice", "bob", ""):
        session = ChatSessionFactory(owner=owner, end_user=end_user, title=f"of {end_user or 'owner'}")
        EpisodeFactory(session=session, user_input=f"marmalade recipe of {end_user or 'owner'}")
        found[end_user] = session
    return found


@pytest.fixture
def alice(owner) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key_create(user=owner, name='app', end_user='alice')[1]}")
    return client


def test_reads_only_that_end_users_sessions(alice, people):
    listed = alice.get("/api/sessions/").json()["results"]
    assert [s["id"] for s in listed] == [str(people["alice"].uuid)]
    assert alice.get("/api/sessions/", {"end_user": "bob"}).json()["results"] == []
    for other in (people["bob"], people[""]):
        for path in ("", "episodes/", "context/?question=recipe", "summaries/", "search/?q=marmalade"):
            assert alice.get(f"/api/sessions/{other.uuid}/{path}").status_code == 404, path
    assert alice.get(f"/api/sessions/{people['alice'].uuid}/context/", {"question": "recipe"}).status_code == 200


def test_search_across_sessions_shows_only_that_end_user(alice, people):
    found = alice.get("/api/search/", {"q": "marmalade recipe"}).json()["results"]
    assert {r["session"] for r in found} == {str(people["alice"].uuid)}


def test_summaries_of_other_end_users_are_not_found(alice, people):
    episode = people["bob"].episodes.get()
    row = SummaryFactory(session=people["bob"], first_episode_id=episode.pk, last_episode_id=episode.pk)
    assert alice.get(f"/api/summaries/{row.pk}/").status_code == 404


def test_writes_only_that_end_users_sessions(alice, people):
    body = {"user_input": "q", "response": "a"}
    assert alice.post(f"/api/sessions/{people['alice'].uuid}/episodes/", body, format="json").status_code == 201
    for other in (people["bob"], people[""]):
        assert alice.post(f"/api/sessions/{other.uuid}/episodes/", body, format="json").status_code == 404
        assert alice.delete(f"/api/sessions/{other.uuid}/").status_code == 404
    assert people["bob"].episodes.count() == 1


def test_a_new_session_is_that_end_users(alice, owner):
    created = alice.post("/api/sessions/", {"title": "new"}, format="json")
    assert created.status_code == 201
    assert created.json()["end_user"] == "alice"
    refused = alice.post("/api/sessions/", {"title": "x", "end_user": "bob"}, format="json")
    assert refused.status_code == 400 and "end_user" in refused.json()
    assert not ChatSession.objects.filter(owner=owner, end_user="bob").exists()


def test_a_session_cannot_be_moved_to_another_end_user(alice, owner):
    empty = ChatSessionFactory(owner=owner, end_user="alice")
    moved = alice.patch(f"/api/sessions/{empty.uuid}/", {"end_user": "bob"}, format="json")
    assert moved.status_code == 400 and "end_user" in moved.json()
    empty.refresh_from_db()
    assert empty.end_user == "alice"


def test_the_openai_surface_is_confined_too(alice, people, owner, settings):
    other = alice.post(
        "/v1/chat/completions",
        {"model": settings.CHAT_MODEL, "messages": [{"role": "user", "content": "hi"}]},
        format="json",
        HTTP_X_NEXUS_SESSION=str(people["bob"].uuid),
    )
    assert other.status_code == 404
    assert other.json()["error"]["code"] == "session_not_found"
    named = alice.post(
        "/v1/chat/completions",
        {"model": settings.CHAT_MODEL, "messages": [{"role": "user", "content": "hi"}], "user": "bob"},
        format="json",
    )
    assert named.status_code == 400
    assert named.json()["error"]["param"] == "user"
    assert not ChatSession.objects.filter(owner=owner, end_user="bob").exclude(pk=people["bob"].pk).exists()


def test_an_unbound_key_reads_every_session_of_its_user(owner, people):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key_create(user=owner, name='all')[1]}")
    assert len(client.get("/api/sessions/").json()["results"]) == 3

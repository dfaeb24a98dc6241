"""One permission model: staff status alone grants nothing over other users'
data; ``view_*`` reads it, ``change_*`` changes it (superusers: everything).

Three staff accounts beside the owner: one with no permission, one with only
the view permissions, one with the change permissions too.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from rest_framework.test import APIClient

from sessions_app.models import ChatSession, Episode
from summaries.models import Summary
from tests.factories import EpisodeFactory, SummaryFactory, UserFactory

pytestmark = pytest.mark.django_db


def _staff(username: str, *perms: str):
    user = UserFactory(username=username, is_staff=True)
    for perm in perms:
        app_label, codename = perm.split(".")
        user.user_permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    return user


def _client(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user=user)
    return client


@pytest.fixture
def plain_staff():
    return _client(_staff("plainstaff"))


@pytest.fixture
def viewing_staff():
    return _client(_staff("viewer", "sessions_app.view_chatsession", "summaries.view_summary"))


@pytest.fixture
def changing_staff():
    return _client(_staff("changer", "sessions_app.change_chatsession", "summaries.change_summary"))


@pytest.fixture
def summary(session):
    first = EpisodeFactory(session=session)
    last = EpisodeFactory(session=session)
    return SummaryFactory(session=session, first_episode_id=first.pk, last_episode_id=last.pk)


def _reads(client, session, summary) -> list[int]:
    base = f"/api/sessions/{session.uuid}"
    return [
        client.get(f"{base}/").status_code,
        client.get(f"{base}/episodes/").status_code,
        client.get(f"{base}/episode-stats/").status_code,
        client.get(f"{base}/search/", {"q": "hello"}).status_code,
        client.get(f"/api/summaries/{summary.pk}/").status_code,
    ]


def _writes(client, session, summary) -> list[int]:
    base = f"/api/sessions/{session.uuid}"
    one = {"user_input": "hi", "response": "hello"}
    return [
        client.post(f"{base}/episodes/", one, format="json").status_code,
        client.post(f"{base}/episodes/", [one, one], format="json").status_code,
        client.patch(f"{base}/", {"title": "taken"}, format="json").status_code,
        client.post(f"{base}/chat/", {"message": "hi"}, format="json").status_code,
        client.patch(f"/api/summaries/{summary.pk}/", {"content": "taken"}, format="json").status_code,
        client.post(f"/api/summaries/{summary.pk}/regenerate/").status_code,
        client.post(f"{base}/summarize/").status_code,
        client.delete(f"{base}/").status_code,
    ]


def test_staff_without_permissions_is_an_ordinary_user(plain_staff, session, summary):
    before = Episode.objects.filter(session=session).count()
    assert _reads(plain_staff, session, summary) == [404] * 5
    assert _writes(plain_staff, session, summary) == [404] * 8
    listed = plain_staff.get("/api/sessions/").json()["results"]
    assert str(session.uuid) not in [row["id"] for row in listed]
    found = plain_staff.get("/api/search/", {"q": "hello"}).json()
    assert all(hit["session"] != str(session.uuid) for hit in found["results"])
    assert Episode.objects.filter(session=session).count() == before
    assert ChatSession.objects.get(pk=session.pk).title == "Owned"
    assert not Summary.objects.filter(content="taken").exists()


def test_staff_sees_and_changes_its_own_sessions(plain_staff):
    created = plain_staff.post("/api/sessions/", {"title": "mine"}, format="json").json()
    base = f"/api/sessions/{created['id']}"
    one = {"user_input": "hi", "response": "hello"}
    assert plain_staff.post(f"{base}/episodes/", one, format="json").status_code == 201
    assert plain_staff.get(f"{base}/episodes/").status_code == 200
    assert plain_staff.delete(f"{base}/").status_code == 204


def test_view_permission_reads_but_does_not_change(viewing_staff, session, summary):
    before = Episode.objects.filter(session=session).count()
    assert _reads(viewing_staff, session, summary) == [200] * 5
    listed = viewing_staff.get("/api/sessions/").json()["results"]
    assert str(session.uuid) in [row["id"] for row in listed]
    assert viewing_staff.get(f"/api/sessions/{session.uuid}/summaries/").json()["results"]
    assert _writes(viewing_staff, session, summary) == [404] * 8
    assert Episode.objects.filter(session=session).count() == before
    assert ChatSession.objects.filter(pk=session.pk).exists()


def test_session_view_permission_alone_does_not_read_summaries(session, summary):
    client = _client(_staff("sessionsonly", "sessions_app.view_chatsession"))
    assert client.get(f"/api/sessions/{session.uuid}/").status_code == 200
    assert client.get(f"/api/summaries/{summary.pk}/").status_code == 404
    assert client.get(f"/api/sessions/{session.uuid}/summaries/").json()["results"] == []


def test_change_permission_changes(changing_staff, session, summary):
    base = f"/api/sessions/{session.uuid}"
    one = {"user_input": "hi", "response": "hello"}
    assert changing_staff.get(f"{base}/").status_code == 200
    assert changing_staff.post(f"{base}/episodes/", one, format="json").status_code == 201
    assert changing_staff.post(f"{base}/episodes/", [one], format="json").status_code == 201
    assert changing_staff.patch(f"{base}/", {"title": "renamed"}, format="json").status_code == 200
    assert changing_staff.post(f"{base}/chat/", {"message": "hi"}, format="json").status_code == 201
    assert changing_staff.post(f"/api/summaries/{summary.pk}/regenerate/").status_code == 202
    assert changing_staff.delete(f"{base}/").status_code == 204


def test_openai_endpoint_needs_the_change_permission(session, settings):
    body = {"model": settings.CHAT_MODEL, "messages": [{"role": "user", "content": "hi"}]}
    header = {"HTTP_X_NEXUS_SESSION": str(session.uuid)}
    for client in (_client(_staff("a")), _client(_staff("b", "sessions_app.view_chatsession"))):
        answer = client.post("/v1/chat/completions", body, format="json", **header)
        assert (answer.status_code, answer.json()["error"]["code"]) == (404, "session_not_found")
    assert not Episode.objects.filter(session=session).exists()
    granted = _client(_staff("c", "sessions_app.change_chatsession"))
    assert granted.post("/v1/chat/completions", body, format="json", **header).status_code == 200
    assert Episode.objects.filter(session=session).count() == 1


def test_usage_needs_the_view_utilitycall_permission(staff_user):
    plain = _staff("nousage")
    granted = _staff("usage", "summaries.view_utilitycall")
    assert _client(plain).get("/api/usage/").status_code == 403
    assert _client(granted).get("/api/usage/").status_code == 200
    assert _client(staff_user).get("/api/usage/").status_code == 200
    for user, expected in ((plain, 403), (granted, 200), (staff_user, 200)):
        web = Client()
        web.force_login(user)
        assert web.get("/admin/usage/").status_code == expected
    web = Client()
    web.force_login(plain)
    assert b"Summarization usage" not in web.get("/admin/").content

"""API keys: created once, stored hashed, used as Bearer on /api/ and /v1/,
revoked at once, never staff, last use written at most once a minute."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from nexus.api.keys.models import ApiKey, key_digest
from nexus.api.keys.services import key_create
from tests.factories import ChatSessionFactory, EpisodeFactory

pytestmark = pytest.mark.django_db


def account_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def key_client(secret: str, scheme: str = "Bearer") -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"{scheme} {secret}")
    return client


def new_key(user, **fields) -> str:
    return key_create(user=user, name=fields.pop("name", "tests"), **fields)[1]


def test_a_key_is_shown_once_and_stored_hashed(owner):
    client = account_client(owner)
    created = client.post("/api/keys/", {"name": "Claude Desktop"}, format="json")
    assert created.status_code == 201, created.content
    body = created.json()
    secret = body["key"]
    assert secret.startswith("nxk_") and len(secret) > 40
    assert body["name"] == "Claude Desktop" and body["end_user"] == ""
    assert body["created_at"] and body["last_used_at"] is None and body["expires_at"] is None
    row = ApiKey.objects.get(pk=body["id"])
    assert row.digest == key_digest(secret) and secret not in {row.digest, row.shown}
    assert secret.startswith(row.shown)
    listed = client.get("/api/keys/").json()
    assert [k["id"] for k in listed] == [body["id"]]
    assert "key" not in listed[0] and secret not in str(listed)


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({}, "name"),
        ({"name": "  "}, "name"),
        ({"name": "x" * 101}, "name"),
        ({"name": "a", "end_user": "u" * 201}, "end_user"),
        ({"name": "a", "expires_at": "2001-01-01T00:00:00Z"}, "expires_at"),
        ({"name": "a", "expires_at": "soon"}, "expires_at"),
        ('{"name": "bad\\ud800"}', "name"),
        ('{"name": "a", "end_user": "nul\\u0000"}', "end_user"),
    ],
)
def test_bad_values_are_400_naming_the_field(owner, payload, field):
    client = account_client(owner)
    if isinstance(payload, str):  # JSON escapes no encoder of the test client would write
        response = client.post("/api/keys/", payload, content_type="application/json")
    else:
        response = client.post("/api/keys/", payload, format="json")
    assert response.status_code == 400
    assert field in response.json()
    assert not ApiKey.objects.exists()


@pytest.mark.parametrize("scheme", ["Bearer", "Token"])
def test_a_key_works_on_the_api_as_its_user(owner, session, scheme):
    client = key_client(new_key(owner), scheme)
    assert client.get(f"/api/sessions/{session.uuid}/").status_code == 200
    written = client.post(
        f"/api/sessions/{session.uuid}/episodes/", {"user_input": "q", "response": "a"}, format="json"
    )
    assert written.status_code == 201, written.content


def test_a_key_works_on_the_openai_surface(owner):
    client = key_client(new_key(owner))
    assert client.get("/v1/models").status_code == 200
    assert key_client("nxk_not-a-key").get("/v1/models").status_code == 401


def test_another_users_session_stays_404(owner, other_user):
    theirs = ChatSessionFactory(owner=other_user)
    assert key_client(new_key(owner)).get(f"/api/sessions/{theirs.uuid}/").status_code == 404


def test_a_key_never_carries_staff_permissions(owner, staff_user):
    theirs = ChatSessionFactory(owner=owner)
    EpisodeFactory(session=theirs, user_input="the owner's words")
    staff_token = account_client(staff_user)
    assert staff_token.get(f"/api/sessions/{theirs.uuid}/").status_code == 200
    staff_key = key_client(new_key(staff_user))
    assert staff_key.get(f"/api/sessions/{theirs.uuid}/").status_code == 404
    assert staff_key.get(f"/api/sessions/{theirs.uuid}/episodes/").status_code == 404
    assert staff_key.get("/api/sessions/").json()["results"] == []
    assert staff_key.get("/api/search/", {"q": "owner's words"}).json()["results"] == []
    assert staff_key.get("/api/usage/").status_code == 403


@pytest.mark.parametrize(
    ("method", "path", "payload"),
    [
        ("get", "/api/keys/", None),
        ("post", "/api/keys/", {"name": "another"}),
        ("delete", "/api/auth/token/", None),
        ("post", "/api/me/erase/", {"confirm": "owner"}),
        ("get", "/api/me/export/", None),
    ],
)
def test_a_key_cannot_act_on_the_account(owner, session, method, path, payload):
    client = key_client(new_key(owner))
    response = (
        getattr(client, method)(path, payload, format="json") if payload else getattr(client, method)(path)
    )
    assert response.status_code == 403
    assert ApiKey.objects.count() == 1


def test_revoking_a_key_stops_it_at_once_and_leaves_the_others(owner, other_user, session):
    account = account_client(owner)
    first = account.post("/api/keys/", {"name": "one"}, format="json").json()
    second = account.post("/api/keys/", {"name": "two"}, format="json").json()
    one, two = key_client(first["key"]), key_client(second["key"])
    assert one.get("/api/sessions/").status_code == two.get("/api/sessions/").status_code == 200
    assert account_client(other_user).delete(f"/api/keys/{first['id']}/").status_code == 404
    assert account.delete(f"/api/keys/{first['id']}/").status_code == 204
    assert one.get("/api/sessions/").status_code == 401
    assert one.get("/v1/models").status_code == 401
    assert two.get("/api/sessions/").status_code == 200
    assert account.get("/api/sessions/").status_code == 200
    assert account.delete(f"/api/keys/{first['id']}/").status_code == 404


@pytest.mark.parametrize("bad_id", ["abc", "99999999999999999999999", "-1"])
def test_a_bad_key_id_is_404(owner, bad_id):
    assert account_client(owner).delete(f"/api/keys/{bad_id}/").status_code == 404


def test_an_expired_key_is_refused_even_when_remembered(owner, session, monkeypatch):
    client = key_client(new_key(owner, expires_at=timezone.now() + timedelta(hours=1)))
    assert client.get("/api/sessions/").status_code == 200
    later = timezone.now() + timedelta(hours=2)
    monkeypatch.setattr("nexus.api.keys.models.timezone.now", lambda: later)
    response = client.get("/api/sessions/")
    assert response.status_code == 401
    assert "expired" in response.json()["detail"]


def test_a_deactivated_user_s_keys_fail(owner, session):
    client = key_client(new_key(owner))
    assert client.get("/api/sessions/").status_code == 200
    owner.is_active = False
    owner.save()
    assert client.get("/api/sessions/").status_code == 401


def key_queries(client: APIClient, session) -> list[str]:
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(f"/api/sessions/{session.uuid}/episode-stats/").status_code == 200
    return [q["sql"] for q in ctx.captured_queries if "api_keys_apikey" in q["sql"]]


def test_a_remembered_key_costs_no_query_and_its_use_is_written_once_a_minute(owner, session, monkeypatch):
    secret = new_key(owner)
    client = key_client(secret)
    first = key_queries(client, session)
    assert len(first) == 2 and first[1].startswith("UPDATE")  # the lookup, then the first use
    used = ApiKey.objects.get().last_used_at
    assert used is not None
    assert key_queries(client, session) == []  # remembered, used within the minute
    later = timezone.now() + timedelta(seconds=61)
    monkeypatch.setattr("nexus.api.keys.services.timezone.now", lambda: later)
    third = key_queries(client, session)
    assert len(third) == 1 and third[0].startswith("UPDATE")
    assert ApiKey.objects.get().last_used_at == later


def test_a_use_another_process_wrote_within_the_minute_is_not_written_again(owner, session):
    secret = new_key(owner)
    ApiKey.objects.update(last_used_at=timezone.now())  # another process, this second
    client = key_client(secret)
    assert [q for q in key_queries(client, session) if q.startswith("UPDATE")] == []

"""Authentication (token and session) and throttling."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

PASSWORD = "correct-horse-battery"  # tests.factories.UserFactory's password


def token_client(user) -> tuple[APIClient, Token]:
    """A client that sends a new token of ``user`` with every request."""
    token = Token.objects.create(user=user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client, token


def token_queries_after_first_request(client: APIClient, session) -> list[str]:
    """The token-table queries of a request that follows a first one."""
    client.get("/api/sessions/")
    with CaptureQueriesContext(connection) as ctx:
        client.get(f"/api/sessions/{session.uuid}/episode-stats/")
    return [q["sql"] for q in ctx.captured_queries if "authtoken_token" in q["sql"]]


@pytest.fixture(autouse=True)
def _fresh_throttle_counters():
    # Throttle history lives in the cache; every test starts from zero.
    cache.clear()
    yield
    cache.clear()


def test_token_for_username_and_password(owner):
    client = APIClient()
    response = client.post("/api/auth/token/", {"username": "owner", "password": PASSWORD}, format="json")
    assert response.status_code == 200
    assert response.json()["token"] == Token.objects.get(user=owner).key


def test_token_is_stable(owner):
    client = APIClient()
    first = client.post("/api/auth/token/", {"username": "owner", "password": PASSWORD}, format="json")
    second = client.post("/api/auth/token/", {"username": "owner", "password": PASSWORD}, format="json")
    assert first.json()["token"] == second.json()["token"]


@pytest.mark.parametrize(
    "payload",
    [
        {"username": "owner", "password": "wrong"},
        {"username": "nobody", "password": PASSWORD},
        {"username": "owner"},
        {},
    ],
)
def test_token_refused(owner, payload):
    response = APIClient().post("/api/auth/token/", payload, format="json")
    assert response.status_code == 400
    assert "token" not in response.json()


def test_token_authenticates(owner, session):
    client, _ = token_client(owner)
    assert client.get(f"/api/sessions/{session.uuid}/").status_code == 200


def test_bad_token_is_401(session):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    assert client.get("/api/sessions/").status_code == 401


def test_session_login_authenticates(owner, session):
    client = APIClient()
    assert client.login(username="owner", password=PASSWORD)
    assert client.get(f"/api/sessions/{session.uuid}/").status_code == 200


def test_session_auth_writes_need_csrf(owner, session):
    client = APIClient(enforce_csrf_checks=True)
    client.login(username="owner", password=PASSWORD)
    response = client.post(f"/api/sessions/{session.uuid}/episodes/", {"user_input": "q", "response": "a"}, format="json")
    assert response.status_code == 403


def test_anonymous_gets_401_or_403():
    assert APIClient().get("/api/sessions/").status_code in (401, 403)


def test_user_throttle(api_client, settings):
    # Day-long windows: no window boundary falls inside a test (bar midnight).
    settings.API_THROTTLE_USER = "3/day"
    codes = [api_client.get("/api/sessions/").status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]


def test_anon_throttle(db, settings):
    settings.API_THROTTLE_ANON = "2/day"
    client = APIClient()
    codes = [client.post("/api/auth/token/", {}, format="json").status_code for _ in range(3)]
    assert codes == [400, 400, 429]


def test_empty_rate_turns_throttling_off(api_client, settings):
    settings.API_THROTTLE_USER = ""
    assert all(api_client.get("/api/sessions/").status_code == 200 for _ in range(5))
    # Those requests were not counted at all (a default rate would have counted them).
    settings.API_THROTTLE_USER = "3/day"
    codes = [api_client.get("/api/sessions/").status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]


def test_deleted_token_stops_working_at_once(owner, session):
    client, token = token_client(owner)
    assert client.get("/api/sessions/").status_code == 200
    token.delete()
    assert client.get("/api/sessions/").status_code == 401


def test_deactivated_user_is_refused_at_once(owner, session):
    client, _ = token_client(owner)
    assert client.get("/api/sessions/").status_code == 200
    owner.is_active = False
    owner.save()
    assert client.get("/api/sessions/").status_code == 401


def test_token_lookup_is_remembered(owner, session):
    client, _ = token_client(owner)
    assert token_queries_after_first_request(client, session) == []


def test_token_lookup_every_request_when_turned_off(owner, session, settings):
    settings.API_TOKEN_CACHE_SECONDS = 0
    client, _ = token_client(owner)
    assert len(token_queries_after_first_request(client, session)) == 1


def test_anon_throttle_ignores_a_forged_forwarded_for(db, settings):
    settings.API_THROTTLE_ANON = "2/day"
    client = APIClient()
    codes = [
        client.post("/api/auth/token/", {}, format="json", HTTP_X_FORWARDED_FOR=f"10.0.0.{n}").status_code
        for n in range(3)
    ]
    assert codes == [400, 400, 429]


def test_delete_revokes_the_callers_token(owner, other_user, session):
    client, token = token_client(owner)
    _, others = token_client(other_user)
    assert client.get("/api/sessions/").status_code == 200
    assert client.delete("/api/auth/token/").status_code == 204
    assert client.get("/api/sessions/").status_code == 401
    assert not Token.objects.filter(pk=token.pk).exists()
    assert Token.objects.filter(pk=others.pk).exists()


def test_delete_needs_a_caller(db):
    assert APIClient().delete("/api/auth/token/").status_code == 401


def test_a_revocation_elsewhere_is_seen_at_once(owner, session):
    # Another process deleted the token: only the shared generation tells this one.
    from nexus.api.authentication import generation_key

    client, token = token_client(owner)
    assert client.get("/api/sessions/").status_code == 200
    Token.objects.filter(pk=token.pk)._raw_delete(Token.objects.db)  # no signal in this process
    cache.set(generation_key(owner.pk), "changed elsewhere")
    assert client.get("/api/sessions/").status_code == 401


def test_a_remembered_token_costs_one_cache_read(owner, session):
    client, _ = token_client(owner)
    client.get("/api/sessions/")
    reads = []
    real_get = cache.get
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cache, "get", lambda *a, **k: reads.append(a[0]) or real_get(*a, **k))
        assert client.get("/api/sessions/").status_code == 200
    assert reads == [f"token-generation:{owner.pk}"]


@pytest.mark.parametrize("how", ["set_password", "admin_form", "changepassword"])
def test_a_new_password_revokes_the_users_tokens(owner, session, how, staff_user):
    client, token = token_client(owner)
    assert client.get("/api/sessions/").status_code == 200
    if how == "set_password":
        owner.set_password("another-horse-battery")
        owner.save()
    elif how == "admin_form":
        from django.test import Client

        browser = Client()
        browser.force_login(staff_user)
        response = browser.post(
            f"/admin/auth/user/{owner.pk}/password/",
            {"password1": "another-horse-battery", "password2": "another-horse-battery", "usable_password": "true"},
        )
        assert response.status_code == 302, response.content[:500]
    else:
        from django.contrib.auth.models import User

        user = User.objects.get(pk=owner.pk)
        user.set_password("another-horse-battery")
        user.save(update_fields=["password"])
    assert not Token.objects.filter(pk=token.pk).exists()
    assert client.get("/api/sessions/").status_code == 401


def test_a_login_or_a_rehash_keeps_the_tokens(owner, session, settings):
    client, token = token_client(owner)
    assert APIClient().login(username="owner", password=PASSWORD)
    # A stronger preferred hasher: the next login rehashes the same password.
    settings.PASSWORD_HASHERS = [
        "django.contrib.auth.hashers.PBKDF2PasswordHasher",
        "django.contrib.auth.hashers.MD5PasswordHasher",
    ]
    assert APIClient().login(username="owner", password=PASSWORD)
    owner.refresh_from_db()
    assert owner.password.startswith("pbkdf2_")
    assert Token.objects.filter(pk=token.pk).exists()
    assert client.get("/api/sessions/").status_code == 200


def test_invalid_tokens_count_against_the_anonymous_throttle(db, settings):
    settings.API_THROTTLE_ANON = "3/day"
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    codes = [client.get("/api/sessions/").status_code for _ in range(4)]
    assert codes == [401, 401, 401, 429]
    assert APIClient().post("/api/auth/token/", {}, format="json").status_code == 429


def test_the_account_token_works_as_bearer(owner, session):
    token = Token.objects.create(user=owner)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token.key}")
    assert client.get(f"/api/sessions/{session.uuid}/").status_code == 200
    with CaptureQueriesContext(connection) as ctx:  # remembered as a Token header is
        assert client.get(f"/api/sessions/{session.uuid}/episode-stats/").status_code == 200
    assert [q for q in ctx.captured_queries if "authtoken_token" in q["sql"]] == []
    token.delete()
    assert client.get("/api/sessions/").status_code == 401


@pytest.mark.parametrize("header", ["Bearer not-a-real-token", "Bearer", "Bearer two parts"])
def test_a_bad_bearer_header_is_401(db, header):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    response = client.get("/api/sessions/")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"


def test_another_scheme_is_not_taken_for_a_token(db):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Basic b3duZXI6eA==")
    response = client.get("/api/sessions/")
    assert response.status_code in (401, 403)
    assert "not provided" in response.json()["detail"]

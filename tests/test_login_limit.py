"""Failed logins are limited per (address, username) and per address, on the
web login, the admin login and POST /api/auth/token/ alike."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

PASSWORD = "correct-horse-battery"


def web(path: str):
    def attempt(username: str, password: str, address: str = "10.1.1.1") -> int:
        return Client(REMOTE_ADDR=address).post(path, {"username": username, "password": password}).status_code

    return attempt


def api(username: str, password: str, address: str = "10.1.1.1") -> int:
    response = APIClient(REMOTE_ADDR=address).post(
        "/api/auth/token/", {"username": username, "password": password}, format="json"
    )
    return response.status_code


PAGES = {"web": web("/accounts/login/"), "admin": web("/admin/login/"), "api": api}
REFUSED = {"web": 200, "admin": 200, "api": 400}
ACCEPTED = {"web": 302, "admin": 302, "api": 200}


@pytest.fixture(autouse=True)
def limits(settings):
    settings.LOGIN_FAILURE_LIMIT = (3, 900)
    settings.LOGIN_FAILURE_ADDRESS_LIMIT = (5, 900)
    settings.API_THROTTLE_ANON = ""


@pytest.mark.parametrize("page", PAGES)
def test_wrong_passwords_then_the_right_one_is_429(owner, staff_user, page):
    attempt = PAGES[page]
    user = "staff" if page == "admin" else "owner"
    assert [attempt(user, "wrong") for _ in range(3)] == [REFUSED[page]] * 3
    assert attempt(user, PASSWORD) == 429


def test_retry_after_is_sent(owner):
    for _ in range(3):
        Client().post("/accounts/login/", {"username": "owner", "password": "wrong"})
    response = Client().post("/accounts/login/", {"username": "owner", "password": PASSWORD})
    assert response.status_code == 429
    assert 1 <= int(response["Retry-After"]) <= 900


def test_the_limit_is_never_per_username_alone(owner):
    attempt = PAGES["web"]
    for _ in range(3):
        attempt("owner", "wrong", address="10.6.6.6")
    assert attempt("owner", "wrong", address="10.6.6.6") == 429
    # The victim, from their own address, still gets in.
    assert attempt("owner", PASSWORD, address="10.2.2.2") == 302


def test_the_pages_share_one_count(owner):
    PAGES["web"]("owner", "wrong")
    PAGES["admin"]("owner", "wrong")
    PAGES["api"]("owner", "wrong")
    assert PAGES["api"]("owner", PASSWORD) == 429


def test_per_address_over_many_usernames_and_a_success_does_not_reset_it(db):
    for n in range(4):
        UserFactory(username=f"u{n}")
    attempt = PAGES["web"]
    assert [attempt(f"u{n}", "wrong") for n in range(4)] == [200] * 4
    assert attempt("u0", PASSWORD) == 302  # resets u0's own count only
    assert attempt("u1", "wrong") == 200  # the address's fifth failure
    assert attempt("u2", PASSWORD) == 429
    assert attempt("u0", PASSWORD) == 429


def test_a_success_resets_that_usernames_count(owner):
    attempt = PAGES["api"]
    assert [attempt("owner", "wrong") for _ in range(2)] == [400, 400]
    assert attempt("owner", PASSWORD) == 200
    assert [attempt("owner", "wrong") for _ in range(2)] == [400, 400]
    assert attempt("owner", PASSWORD) == 200


def test_no_limit_when_turned_off(owner, settings):
    settings.LOGIN_FAILURE_LIMIT = None
    settings.LOGIN_FAILURE_ADDRESS_LIMIT = None
    attempt = PAGES["web"]
    assert all(attempt("owner", "wrong") == 200 for _ in range(6))
    assert attempt("owner", PASSWORD) == 302


def _raw_api(body: str) -> int:
    return APIClient().post("/api/auth/token/", body, content_type="application/json").status_code


@pytest.mark.parametrize("username", ["own\\u0000er", "own\\ud800er"], ids=["nul", "lone-surrogate"])
def test_a_username_the_database_cannot_hold_is_a_400_on_the_api(owner, username):
    body = f'{{"username": "{username}", "password": "{PASSWORD}"}}'
    assert _raw_api(body) == 400
    # ... and counts for nothing: the right login still works.
    assert api("owner", PASSWORD) == 200


@pytest.mark.parametrize("path", ["/accounts/login/", "/admin/login/"])
def test_a_nul_in_a_web_login_username_is_refused_by_the_form(owner, path):
    response = Client().post(path, {"username": "own\x00er", "password": PASSWORD})
    assert response.status_code == 200
    assert not response.wsgi_request.user.is_authenticated

"""Errors under /api/ and /v1/ are JSON in every mode, debugging too: an
unknown address is a 404 and a wrong method on a known one a 405, as
``{"detail"}`` under /api/ and in OpenAI's error shape under /v1/. The web
pages keep Django's HTML (its debug page while debugging).

``DEBUG`` is switched per test: Django decides on its HTML debug 404 page
when the request is answered, so the override reaches it.
"""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.authtoken.models import Token

pytestmark = pytest.mark.django_db

MODES = pytest.mark.parametrize("debug", [True, False], ids=["debug", "production"])


@pytest.fixture
def mode(settings, request) -> None:
    settings.DEBUG = request.node.callspec.params["debug"]


def json_of(response) -> dict:
    assert response["Content-Type"] == "application/json", response.content[:200]
    return response.json()


def openai_error(message: str, code: str) -> dict:
    return {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}}


@MODES
@pytest.mark.parametrize("method", ["get", "post", "patch", "delete"])
@pytest.mark.parametrize("path", ["/api/no-such-thing/", "/api/sessions/x/no-such-thing/", "/api/nothing"])
def test_an_unknown_api_address_is_a_json_404(mode, debug, method, path):
    response = getattr(Client(), method)(path)
    assert response.status_code == 404
    assert json_of(response) == {"detail": f"Invalid URL ({method.upper()} {path})."}


@MODES
@pytest.mark.parametrize("method", ["get", "post"])
@pytest.mark.parametrize("path", ["/v1/embeddings", "/v1/chat/completions/", "/v1/models/x/y"])
def test_an_unknown_openai_address_is_a_404_in_openai_shape(mode, debug, method, path):
    response = getattr(Client(), method)(path, HTTP_AUTHORIZATION="Bearer whatever")
    assert response.status_code == 404
    assert json_of(response) == openai_error(f"Invalid URL ({method.upper()} {path}).", "unknown_url")


@MODES
def test_a_read_without_the_trailing_slash_is_still_redirected(mode, debug):
    response = Client().get("/api/sessions?page=2")
    assert response.status_code == 301
    assert response["Location"] == "/api/sessions/?page=2"


@MODES
def test_a_write_without_the_trailing_slash_is_told_the_address(mode, debug):
    # A redirect would turn the POST into a GET and drop its body (and, while
    # debugging, Django raises instead of redirecting: an HTML 500).
    response = Client().post("/api/sessions", {"title": "x"}, content_type="application/json")
    assert response.status_code == 404
    assert json_of(response) == {
        "detail": "Invalid URL (POST /api/sessions): the address ends with a slash, /api/sessions/."
    }


@MODES
def test_a_wrong_method_on_a_known_api_address_is_a_json_405(mode, debug, api_client):
    response = api_client.put("/api/sessions/", {}, format="json")
    assert response.status_code == 405
    assert json_of(response) == {"detail": 'Method "PUT" not allowed.'}
    assert "POST" in response["Allow"]


@MODES
@pytest.mark.parametrize(("method", "path"), [("get", "/v1/chat/completions"), ("post", "/v1/models")])
def test_a_wrong_method_on_a_known_openai_address_is_a_405_in_openai_shape(mode, debug, owner, method, path):
    token = Token.objects.create(user=owner).key
    response = getattr(Client(), method)(path, HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 405
    assert json_of(response) == openai_error(
        f'Method "{method.upper()}" not allowed.', "method_not_allowed"
    )


@MODES
def test_a_web_page_keeps_djangos_html_404(mode, debug, client):
    response = client.get("/no-such-page/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")
    # While debugging, Django's debug page; otherwise the site's plain 404 page.
    assert (b"Page not found at /no-such-page/" in response.content) is debug

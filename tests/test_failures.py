"""What a request answers when something below it fails (``nexus.failures``).

An unreachable database answers 503 with ``Retry-After`` on every endpoint:
JSON ``{"detail"}`` under /api/, OpenAI's error shape under /v1/, a plain
page for the web pages. Any other unexpected error under /api/ and /v1/ is a
JSON 500 with the traceback logged, never Django's HTML page.

Here the database "goes away" through ``connection.execute_wrapper`` (every
query raises the ``OperationalError`` a dropped connection raises), on both
databases; ``test_database_outage.py`` cuts real PostgreSQL connections.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from django.db import OperationalError, connection
from django.test import Client, override_settings
from rest_framework.authtoken.models import Token

from tests.factories import EpisodeFactory

pytestmark = pytest.mark.django_db

# Transaction control passes, so the test's own transaction survives.
PASS_THROUGH = ("SAVEPOINT", "RELEASE SAVEPOINT", "ROLLBACK TO SAVEPOINT")


def refuse_queries(execute, sql, params, many, context):
    if sql.lstrip().upper().startswith(PASS_THROUGH):
        return execute(sql, params, many, context)
    raise OperationalError("server closed the connection unexpectedly")


@pytest.fixture
def database_down() -> Iterator[None]:
    with connection.execute_wrapper(refuse_queries):
        yield


@pytest.fixture
def token(owner) -> str:
    return Token.objects.create(user=owner).key


def assert_no_html(response) -> None:
    assert "html" not in response["Content-Type"], response.content[:200]
    assert b"<html" not in response.content.lower()


API_REQUESTS = [
    ("get", "/api/sessions/{s}/", None),
    ("get", "/api/sessions/", None),
    ("post", "/api/sessions/", {"title": "new"}),
    ("patch", "/api/sessions/{s}/", {"title": "renamed"}),
    ("delete", "/api/sessions/{s}/", None),
    ("get", "/api/sessions/{s}/episodes/", None),
    ("post", "/api/sessions/{s}/episodes/", {"user_input": "hi", "response": "hello"}),
    ("post", "/api/sessions/{s}/episodes/", [{"user_input": "a", "response": "b"}] * 3),
    ("post", "/api/sessions/{s}/chat/", {"message": "hello"}),
    ("get", "/api/sessions/{s}/summary-status/", None),
    ("post", "/api/me/erase/", {"confirm": "owner"}),
    ("get", "/api/me/export/", None),
    ("get", "/api/sessions/{s}/summaries/", None),
    ("get", "/api/sessions/{s}/context/?question=what", None),
    ("get", "/api/search/?q=garden", None),
    ("get", "/api/usage/", None),
    ("post", "/api/auth/token/", {"username": "owner", "password": "wrong"}),
]


@pytest.mark.parametrize(("method", "path", "body"), API_REQUESTS)
def test_api_answers_503_json_with_retry_after_when_the_database_is_down(token, session, method, path, body):
    client = Client(raise_request_exception=False, HTTP_AUTHORIZATION=f"Token {token}")
    url = path.format(s=session.uuid)
    with connection.execute_wrapper(refuse_queries):
        response = getattr(client, method)(url, data=body, content_type="application/json")
    assert response.status_code == 503, (url, response.status_code, response.content[:300])
    assert_no_html(response)
    assert int(response["Retry-After"]) > 0
    assert "nothing was stored" in response.json()["detail"]


def test_nothing_is_stored_by_a_write_the_database_refused(token, session):
    client = Client(raise_request_exception=False, HTTP_AUTHORIZATION=f"Token {token}")
    EpisodeFactory(session=session)
    with connection.execute_wrapper(refuse_queries):
        response = client.post(
            f"/api/sessions/{session.uuid}/episodes/",
            {"user_input": "lost?", "response": "no"},
            content_type="application/json",
        )
    assert response.status_code == 503
    assert session.episodes.count() == 1
    # Once the database answers again, so does Nexus.
    again = client.post(
        f"/api/sessions/{session.uuid}/episodes/",
        {"user_input": "retried", "response": "stored"},
        content_type="application/json",
    )
    assert again.status_code == 201, again.content
    assert session.episodes.count() == 2


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("get", "/v1/models", None),
        (
            "post",
            "/v1/chat/completions",
            {"model": "nexus", "messages": [{"role": "user", "content": "hello"}]},
        ),
        (
            "post",
            "/v1/chat/completions",
            {"model": "nexus", "stream": True, "messages": [{"role": "user", "content": "hello"}]},
        ),
    ],
)
def test_openai_endpoints_answer_503_in_openai_shape(token, method, path, body):
    Token.objects.filter(key=token)  # the token exists before the database goes
    client = Client(raise_request_exception=False, HTTP_AUTHORIZATION=f"Bearer {token}")
    with connection.execute_wrapper(refuse_queries):
        response = getattr(client, method)(path, data=body, content_type="application/json")
    assert response.status_code == 503, response.content[:300]
    assert_no_html(response)
    assert int(response["Retry-After"]) > 0
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["type"] == "server_error" and error["code"] == "database_unavailable"


def test_web_pages_answer_a_plain_503_page(owner, session):
    client = Client(raise_request_exception=False)
    client.force_login(owner)
    for url in ("/", f"/sessions/{session.uuid}/"):
        with connection.execute_wrapper(refuse_queries):
            response = client.get(url)
        assert response.status_code == 503, (url, response.status_code)
        assert int(response["Retry-After"]) > 0
        html = response.content.decode()
        assert "briefly unavailable" in html
        assert "Traceback" not in html and "Server Error (500)" not in html
        assert "Content-Security-Policy" in response.headers


# --- every other unexpected error ------------------------------------------------


def test_an_unexpected_api_error_answers_json_500_and_logs_the_traceback(api_client, monkeypatch, caplog):
    from sessions_app.api import views

    def explode(*args, **kwargs):
        raise RuntimeError("boom in the session list")

    monkeypatch.setattr(views.SessionListView, "get_queryset", explode)
    client = Client(raise_request_exception=False)
    client.force_login(api_client.handler._force_user)
    with caplog.at_level(logging.ERROR, logger="django.request"):
        response = client.get("/api/sessions/")
    assert response.status_code == 500
    assert_no_html(response)
    assert set(response.json()) == {"detail"}
    assert "boom" not in response.content.decode()  # the detail stays in the log
    logged = [r for r in caplog.records if r.name == "django.request" and r.exc_info]
    assert logged and "boom in the session list" in str(logged[0].exc_info[1])


def test_an_unexpected_openai_error_answers_500_in_openai_shape(token, monkeypatch, caplog):
    from summaries.openai_api import views

    def explode(*args, **kwargs):
        raise RuntimeError("boom in the model list")

    monkeypatch.setattr(views.ModelListView, "get", explode)
    client = Client(raise_request_exception=False, HTTP_AUTHORIZATION=f"Bearer {token}")
    with caplog.at_level(logging.ERROR):
        response = client.get("/v1/models")
    assert response.status_code == 500
    assert_no_html(response)
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["type"] == "server_error"
    assert any(r.exc_info and "boom in the model list" in str(r.exc_info[1]) for r in caplog.records)


class ExplodingMiddleware:
    """Fails outside any view, where only ``handler500`` can answer."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        raise RuntimeError("boom in a middleware")


@pytest.mark.parametrize(
    ("path", "shape"), [("/api/sessions/", {"detail"}), ("/v1/models", {"error"}), ("/", None)]
)
def test_errors_outside_views_answer_json_under_the_apis(settings, path, shape):
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, "tests.test_failures.ExplodingMiddleware"]
    response = Client(raise_request_exception=False).get(path)
    assert response.status_code == 500
    if shape is None:
        assert "html" in response["Content-Type"]  # the site's own 500 page
    else:
        assert_no_html(response)
        assert set(response.json()) == shape


def test_an_unknown_api_address_answers_json_404():
    for path in ("/api/no-such-thing/", "/v1/no-such-thing"):
        response = Client().get(path)
        assert response.status_code == 404
        assert_no_html(response)


def test_the_debug_page_is_not_served_to_api_clients(api_client, monkeypatch):
    from sessions_app.api import views

    monkeypatch.setattr(views.SessionListView, "get_queryset", lambda self: 1 / 0)
    client = Client(raise_request_exception=False)
    client.force_login(api_client.handler._force_user)
    with override_settings(DEBUG=True):
        response = client.get("/api/sessions/")
    assert response.status_code == 500
    assert_no_html(response)

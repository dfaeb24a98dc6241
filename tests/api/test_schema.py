"""OpenAPI schema, the docs page, and a bounded schemathesis run that fails on any 5xx."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
import schemathesis
from django.core.cache import cache
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, given, seed
from hypothesis import settings as hypothesis_settings
from hypothesis.errors import Unsatisfiable
from rest_framework.authtoken.models import Token
from schemathesis.generation.modes import GenerationMode

from tests.factories import ChatSessionFactory, EpisodeFactory, SummaryFactory

pytestmark = pytest.mark.django_db

DESIGN_PATHS = [
    "/api/auth/token/",
    "/api/sessions/",
    "/api/sessions/{uuid}/",
    "/api/sessions/{uuid}/episodes/",
    "/api/sessions/{uuid}/episode-stats/",
    "/api/sessions/{uuid}/episodes/since/{after_id}/",
    "/api/sessions/{uuid}/summaries/",
    "/api/sessions/{uuid}/summarize/",
    "/api/sessions/{uuid}/summary-status/",
    "/api/summaries/",
    "/api/summaries/{id}/",
    "/api/summaries/{id}/regenerate/",
]


def test_schema_is_openapi_3_with_the_design_paths(anon_client):
    response = anon_client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    for path in DESIGN_PATHS:
        assert path in schema["paths"], path


def test_schema_documents_payload_fields(anon_client):
    components = anon_client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()[
        "components"
    ]["schemas"]
    assert set(components["Session"]["properties"]) >= {
        "id", "title", "metadata", "created_at", "updated_at",
        "episode_count", "total_tokens", "last_episode_id", "summary_state",
    }  # fmt: skip
    assert components["Session"]["properties"]["id"]["format"] == "uuid"
    assert set(components["Episode"]["properties"]) == {
        "id", "position", "user_input", "response", "token_count", "metadata", "created_at",
    }  # fmt: skip
    assert {"first_position", "last_position", "first_episode_id", "last_episode_id"} <= set(
        components["Summary"]["properties"]
    )
    # Offsets of the passages a long retrieved exchange is quoted by.
    passages = components["Context"]["properties"]["passages"]
    assert passages["type"] == "object"
    assert passages["additionalProperties"]["items"]["items"]["type"] == "integer"


def test_docs_page_uses_only_local_assets(anon_client):
    response = anon_client.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "swagger-ui" in html
    urls = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']""", html)
    urls += re.findall(r"""["'](https?://[^"']+|//[^"']+)["']""", html)
    assert urls, "the page references its assets"
    for url in urls:
        assert not url.startswith(("http://", "https://", "//")), url
    assert any(u.startswith("/static/drf_spectacular_sidecar/") for u in urls)


# --- schemathesis ---------------------------------------------------------------


@pytest.fixture
def wsgi_app() -> Iterator[object]:
    """The real WSGI application, run inside the test's transaction.

    Django's test client stops the per-request connection cleanup for the
    same reason: closing the connection would end the test's transaction.
    """
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    cache.clear()
    try:
        yield get_wsgi_application()
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
        cache.clear()


def test_no_input_yields_a_server_error(owner, wsgi_app, settings):
    """Every operation, positive and negative inputs, as a user who owns a
    session with episodes and a summary. Bounded and deterministic."""
    session = ChatSessionFactory(owner=owner)
    made = EpisodeFactory.create_batch(6, session=session)
    summary = SummaryFactory(session=session, first_episode_id=made[0].pk, last_episode_id=made[1].pk)
    token = Token.objects.create(user=owner)
    headers = {"Authorization": f"Token {token.key}"}
    known = {"uuid": str(session.uuid), "id": summary.pk}
    settings.ALLOWED_HOSTS = ["localhost", "testserver"]

    schema = schemathesis.openapi.from_wsgi("/api/schema/", wsgi_app)
    server_errors: list[str] = []
    ran = 0
    seen: set[str] = set()
    operations = [result.ok() for result in schema.get_all_operations()]
    # Deletions last, so every other operation meets the session alive.
    operations.sort(key=lambda op: op.method.upper() == "DELETE")
    for operation in operations:
        fixed = {name: known[name] for name in re.findall(r"{(\w+)}", operation.path) if name in known}
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            strategy = operation.as_strategy(generation_mode=mode, path_parameters=fixed or None)

            @seed(20261130)
            @hypothesis_settings(
                max_examples=12,
                derandomize=True,
                database=None,
                deadline=None,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=list(HealthCheck),
            )
            @given(case=strategy)
            def exercise(case) -> None:
                nonlocal ran
                response = case.call(headers=headers)
                ran += 1
                seen.add(case.operation.label)
                if response.status_code >= 500:
                    server_errors.append(f"{response.status_code} {case.method} {case.formatted_path}: {case.body!r}")

            try:
                exercise()
            except Unsatisfiable:
                # Nothing invalid can be built for this operation (e.g. only
                # fixed path parameters): the positive run covered it.
                assert mode is GenerationMode.NEGATIVE, operation.label
    assert ran > 50
    for label in ("POST /api/sessions/{uuid}/episodes/", "PATCH /api/summaries/{id}/", "POST /api/summaries/"):
        assert label in seen, (label, sorted(seen))
    assert not server_errors, "\n".join(server_errors[:20])

"""Metadata the database or a page cannot hold: numbers beyond double range
(``1e309`` parses as infinity) and nesting deeper than ``JSON_MAX_DEPTH``,
refused as a 400 naming ``metadata`` on every path that stores it."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from sessions_app.models import ChatSession, Episode
from tests.factories import ChatSessionFactory, EpisodeFactory

pytestmark = pytest.mark.django_db

HUGE = '{"x": 1e309}'


def nested(levels: int) -> dict:
    value: dict = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def post_raw(client, url: str, body: str, method: str = "post"):
    return getattr(client, method)(url, body, content_type="application/json")


def episode_body(metadata: str) -> str:
    return f'{{"user_input": "q", "response": "a", "metadata": {metadata}}}'


@pytest.mark.parametrize("metadata", [HUGE, '{"x": [-1e400]}', json.dumps(nested(33))])
def test_single_episode_write_refuses_the_metadata(api_client, session, metadata):
    response = post_raw(api_client, f"/api/sessions/{session.uuid}/episodes/", episode_body(metadata))
    assert response.status_code == 400, response.content
    assert "metadata" in response.json()
    assert not Episode.objects.exists()


def test_bulk_write_refuses_the_metadata(api_client, session):
    body = f'[{episode_body("{}")}, {episode_body(HUGE)}]'
    response = post_raw(api_client, f"/api/sessions/{session.uuid}/episodes/", body)
    assert response.status_code == 400, response.content
    assert "metadata" in json.dumps(response.json())
    assert not Episode.objects.exists()


@pytest.mark.parametrize("metadata", [HUGE, json.dumps(nested(900))])
def test_session_create_and_patch_refuse_the_metadata(api_client, session, metadata):
    created = post_raw(api_client, "/api/sessions/", f'{{"title": "t", "metadata": {metadata}}}')
    assert created.status_code == 400, created.content
    assert "metadata" in created.json()
    patched = post_raw(api_client, f"/api/sessions/{session.uuid}/", f'{{"metadata": {metadata}}}', "patch")
    assert patched.status_code == 400, patched.content
    assert "metadata" in patched.json()
    session.refresh_from_db()
    assert session.metadata == {}
    assert ChatSession.objects.count() == 1


def test_the_deepest_metadata_allowed_is_stored_and_every_admin_page_renders_it(api_client, staff_user, settings):
    deepest = nested(settings.JSON_MAX_DEPTH)
    created = api_client.post("/api/sessions/", {"title": "t", "metadata": deepest}, format="json")
    assert created.status_code == 201
    session = ChatSession.objects.get(uuid=created.json()["id"])
    episode = EpisodeFactory(session=session, metadata=deepest)
    browser = Client()
    browser.force_login(staff_user)
    for url in (
        reverse("admin:sessions_app_chatsession_change", args=[session.pk]),
        reverse("admin:sessions_app_episode_change", args=[episode.pk]),
        reverse("admin:sessions_app_episode_changelist") + f"?session__id__exact={session.pk}",
    ):
        assert browser.get(url).status_code == 200, url


def test_one_level_more_is_refused(api_client, settings):
    response = api_client.post(
        "/api/sessions/", {"title": "t", "metadata": nested(settings.JSON_MAX_DEPTH + 1)}, format="json"
    )
    assert response.status_code == 400
    assert "levels" in response.json()["metadata"][0]


@pytest.mark.parametrize("metadata", [HUGE, json.dumps(nested(900))])
def test_import_transcript_refuses_the_metadata(owner, tmp_path, metadata):
    path = tmp_path / "t.jsonl"
    path.write_text(
        '{"type": "session", "format": "nexus-transcript/1", "title": "t"}\n'
        f'{{"user_input": "q", "response": "a", "metadata": {metadata}}}\n'
    )
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("import_transcript", str(path), "--owner", "owner", stdout=io.StringIO(), stderr=err)
    assert '"metadata"' in err.getvalue()
    assert not Episode.objects.exists()


def test_session_with_metadata_is_untouched_by_a_refused_patch(api_client, owner):
    session = ChatSessionFactory(owner=owner, metadata={"keep": 1})
    response = post_raw(api_client, f"/api/sessions/{session.uuid}/", f'{{"metadata": {HUGE}}}', "patch")
    assert response.status_code == 400
    session.refresh_from_db()
    assert session.metadata == {"keep": 1}

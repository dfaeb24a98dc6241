"""What a chat remembers, on the pages: new chats default to
``SESSION_MEMORY_DEFAULT``, the new-chat form and the chat header switch it."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from sessions_app.models import ChatSession
from tests.factories import ChatSessionFactory, EpisodeFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def web(owner) -> Client:
    client = Client()
    client.force_login(owner)
    return client


@pytest.mark.parametrize("default", ["shared", "session"])
def test_a_new_chat_takes_the_default_when_the_form_names_none(web, settings, default):
    settings.SESSION_MEMORY_DEFAULT = default
    page = web.get("/").content.decode()
    assert f'value="{default}" checked' in page
    web.post("/", {"title": "Plain"})
    assert ChatSession.objects.get(title="Plain").memory_scope == default


@pytest.mark.parametrize("chosen", ["shared", "session"])
def test_the_new_chat_form_chooses(web, settings, chosen):
    settings.SESSION_MEMORY_DEFAULT = "shared"
    response = web.post("/", {"title": "Chosen", "memory_scope": chosen})
    session = ChatSession.objects.get(title="Chosen")
    assert response.status_code == 302 and session.memory_scope == chosen


def test_a_bad_choice_makes_no_chat(web):
    web.post("/", {"title": "Bad", "memory_scope": "everyone"})
    assert not ChatSession.objects.filter(title="Bad").exists()


def test_the_chat_header_shows_and_switches_the_memory(web, owner):
    session = ChatSessionFactory(owner=owner, memory_scope="shared")
    EpisodeFactory(session=session)
    url = reverse("session-chat", args=[session.uuid])
    page = web.get(url).content.decode()
    assert 'value="shared" class="button button-small" aria-pressed="true">Remembers your other chats' in page
    assert 'aria-pressed="false">This chat only' in page
    response = web.post(reverse("session-memory", args=[session.uuid]), {"memory_scope": "session"})
    assert response.status_code == 302 and response["Location"] == url
    session.refresh_from_db()
    assert session.memory_scope == "session"
    assert 'aria-pressed="true">This chat only' in web.get(url).content.decode()


def test_another_users_chat_cannot_be_switched(web, other_user):
    theirs = ChatSessionFactory(owner=other_user, memory_scope="shared")
    response = web.post(reverse("session-memory", args=[theirs.uuid]), {"memory_scope": "session"})
    assert response.status_code == 404
    theirs.refresh_from_db()
    assert theirs.memory_scope == "shared"


def test_a_bad_switch_changes_nothing(web, owner):
    session = ChatSessionFactory(owner=owner, memory_scope="shared")
    web.post(reverse("session-memory", args=[session.uuid]), {"memory_scope": "everyone"})
    session.refresh_from_db()
    assert session.memory_scope == "shared"

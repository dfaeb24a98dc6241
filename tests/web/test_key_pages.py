"""The page of one's API keys and the keys in the admin: the key shown once,
listed by its shown start, revoked for good."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from rest_framework.test import APIClient

from nexus.api.keys.models import ApiKey, key_digest
from nexus.api.keys.services import key_create

pytestmark = pytest.mark.django_db

SECRET = re.compile(r"nxk_[A-Za-z0-9_-]{40,}")


def web_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def works(secret: str) -> bool:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client.get("/api/sessions/").status_code == 200


def test_the_page_needs_a_login(client):
    assert client.get("/keys/").status_code == 302


def test_create_shows_the_key_once_then_lists_it(owner):
    web = web_client(owner)
    created = web.post("/keys/", {"name": "Cursor", "end_user": "", "expires_in_days": "30"})
    assert created.status_code == 200
    assert "no-store" in created["Cache-Control"]
    (secret,) = set(SECRET.findall(created.content.decode()))
    assert works(secret)
    key = ApiKey.objects.get()
    assert key.digest == key_digest(secret) and key.expires_at is not None
    listed = web.get("/keys/").content.decode()
    assert "Cursor" in listed and key.shown in listed
    assert SECRET.findall(listed) == []


def test_a_bad_value_is_shown_on_the_form(owner):
    answer = web_client(owner).post("/keys/", {"name": "", "end_user": "u" * 201})
    assert answer.status_code == 400
    assert not ApiKey.objects.exists()


def test_revoke_from_the_page(owner, other_user):
    key, secret = key_create(user=owner, name="Zed")
    assert works(secret)
    assert web_client(other_user).post(f"/keys/{key.pk}/revoke/").status_code == 404
    answer = web_client(owner).post(f"/keys/{key.pk}/revoke/")
    assert answer.status_code == 302
    assert not works(secret)
    assert not ApiKey.objects.exists()


def test_the_page_lists_only_ones_own_keys(owner, other_user):
    key_create(user=other_user, name="Somebody else's")
    key_create(user=owner, name="Mine")
    page = web_client(owner).get("/keys/").content.decode()
    assert "Mine" in page and "Somebody else" not in page


def test_staff_create_and_revoke_in_the_admin(staff_user, owner):
    admin = web_client(staff_user)
    created = admin.post(
        "/admin/api_keys/apikey/add/",
        {"user": owner.pk, "name": "Made by staff", "end_user": "", "expires_at": ""},
    )
    assert created.status_code == 200, created.content[:500]
    (secret,) = set(SECRET.findall(created.content.decode()))
    key = ApiKey.objects.get()
    assert key.user_id == owner.pk and works(secret)
    listed = admin.get("/admin/api_keys/apikey/").content.decode()
    assert "Made by staff" in listed and SECRET.findall(listed) == []
    deleted = admin.post(f"/admin/api_keys/apikey/{key.pk}/delete/", {"post": "yes"})
    assert deleted.status_code == 302
    assert not works(secret)

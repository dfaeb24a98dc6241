"""The Content-Security-Policy header reaches the admin and the API docs too,
and the docs page works under it: no inline script, assets of our own."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from nexus.web import ADMIN_CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY

pytestmark = pytest.mark.django_db


def test_admin_pages_send_the_policy(staff_user, session):
    client = Client()
    assert client.get("/admin/login/")["Content-Security-Policy"] == ADMIN_CONTENT_SECURITY_POLICY
    client.force_login(staff_user)
    for url in (
        "/admin/",
        "/admin/sessions_app/chatsession/",
        f"/admin/sessions_app/chatsession/{session.pk}/change/",
        "/admin/usage/",
    ):
        response = client.get(url)
        assert response.status_code == 200, url
        policy = response["Content-Security-Policy"]
        assert "script-src 'self';" in policy and "frame-ancestors 'none'" in policy, url


def test_docs_page_sends_the_policy_and_has_no_inline_script(anon_client):
    response = anon_client.get("/api/docs/")
    assert response.status_code == 200
    assert response["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    html = response.content.decode()
    # Every <script> and stylesheet is a file; none carries code inline.
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html)
    assert "<style" not in html
    scripts = re.findall(r"""<script[^>]*\bsrc=["']([^"']+)["']""", html)
    start_up = [src for src in scripts if "script" in src and src.startswith("/api/docs/")]
    assert start_up, scripts


def test_docs_start_up_script_is_served_and_points_at_the_schema(anon_client):
    html = anon_client.get("/api/docs/").content.decode()
    src = re.search(r"""<script[^>]*\bsrc=["'](/api/docs/\?[^"']*)["']""", html).group(1)
    script = anon_client.get(src.replace("&amp;", "&"))
    assert script.status_code == 200
    assert script["Content-Type"].startswith("application/javascript")
    assert "/api/schema/" in script.content.decode()
    assert anon_client.get("/api/schema/").status_code == 200

"""Fixtures shared by the whole suite: three users (owner, another user,
staff), an API client for each, so isolation can be tested everywhere, and a
session of the owner's."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from nexus import after_response, store_guard
from nexus.api import polled_generation
from nexus.counters import forget_leases
from sessions_app.semantic import person_vectors
from sessions_app.semantic.neighbours import forget as forget_vectors
from tests.factories import ChatSessionFactory, UserFactory

# fake_model / fake_model_process: the fake model server (tests/fake_model_server.py).
pytest_plugins = ["tests.conftest_fake_model"]


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Each test starts with an empty cache: throttle counts, login failures,
    token marks and a row's queued regeneration must not leak into the next
    test (ids can repeat), nor the throttle numbers a process holds, nor the
    episode vectors it keeps."""
    cache.clear()
    forget_leases()
    forget_vectors()
    person_vectors.forget()
    store_guard.reset()
    polled_generation.forget()
    yield
    cache.clear()
    forget_leases()
    forget_vectors()
    person_vectors.forget()
    # A response a test never closed must not keep the next test's work.
    after_response.forget()


# Long enough for the slowest request of a live-server test (a chat turn on a loaded machine).
LIVE_SERVER_DRAIN_SECONDS = 60


@pytest.fixture(autouse=True)
def _live_server_requests_over(request):
    """A live-server test ends once the server's requests are over. The client
    has its answer before the server closes the response and runs the work
    kept for after it (``nexus.after_response``: the summarization check, and
    without a broker the tasks it sends); on SQLite the server thread shares
    the test's connection, so that work must not overlap the database flush
    that ends the test. Set up after the test's database, so it waits before
    the flush."""
    if "live_server" not in request.fixturenames:
        yield
        return
    request.getfixturevalue("transactional_db")
    yield
    after_response.forget()  # a response the test itself never closed is not the server's
    if not after_response.wait_idle(LIVE_SERVER_DRAIN_SECONDS):
        pytest.fail(f"the live server still runs a request {LIVE_SERVER_DRAIN_SECONDS}s after the test")


@pytest.fixture
def owner(db):
    return UserFactory(username="owner")


@pytest.fixture
def other_user(db):
    return UserFactory(username="other")


@pytest.fixture
def staff_user(db):
    return UserFactory(username="staff", is_staff=True, is_superuser=True)


@pytest.fixture
def session(owner):
    return ChatSessionFactory(owner=owner, title="Owned")


def _client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user=user)
    return client


@pytest.fixture
def anon_client() -> APIClient:
    return APIClient()


@pytest.fixture
def api_client(owner) -> APIClient:
    return _client_for(owner)


@pytest.fixture
def other_client(other_user) -> APIClient:
    return _client_for(other_user)


@pytest.fixture
def staff_client(staff_user) -> APIClient:
    return _client_for(staff_user)

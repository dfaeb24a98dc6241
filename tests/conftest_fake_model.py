"""Fixtures for the fake model server (tests/fake_model_server.py), ``model``
(the chat backend pointed at it), and ``use_client`` for a fake model client
in process.

Loaded for the whole suite by ``pytest_plugins`` in the root conftest.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from summaries.inference import register_backend, unregister_backend
from tests.fake_model_server import FakeModelProcess, FakeModelServer

#: The backend name the fake client is registered under.
FAKE_BACKEND = "test-fake"


@pytest.fixture
def fake_model() -> Iterator[FakeModelServer]:
    """A fake model server in a thread of the test process, on a free port."""
    with FakeModelServer() as server:
        yield server


@pytest.fixture
def model(fake_model, settings) -> FakeModelServer:
    """The ollama backend pointed at the fake model server (for chat turns)."""
    settings.INFERENCE_BACKEND = "ollama"
    settings.INFERENCE_SERVICE_URL = fake_model.url
    settings.CHAT_MODEL = "fake-chat"
    return fake_model


@pytest.fixture
def fake_model_process() -> Iterator[FakeModelProcess]:
    """The fake model server as its own process, for tests whose callers
    (Celery workers) run in other processes; read ``.requests`` over HTTP."""
    with FakeModelProcess() as server:
        yield server


@pytest.fixture
def use_client(settings) -> Iterator[Callable[[Any], Any]]:
    """``use_client(fake)`` makes ``fake`` the configured model client for the
    rest of the test (registered as a backend and selected by
    ``INFERENCE_BACKEND``, the way production chooses one) and returns it."""

    def use(client: Any) -> Any:
        register_backend(FAKE_BACKEND, lambda: client)
        settings.INFERENCE_BACKEND = FAKE_BACKEND
        return client

    yield use
    unregister_backend(FAKE_BACKEND)

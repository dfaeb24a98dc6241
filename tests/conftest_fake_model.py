"""Fixtures for the fake model server (tests/fake_model_server.py).

Loaded for the whole suite by ``pytest_plugins`` in the root conftest.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fake_model_server import FakeModelProcess, FakeModelServer


@pytest.fixture
def fake_model() -> Iterator[FakeModelServer]:
    """A fake model server in a thread of the test process, on a free port."""
    with FakeModelServer() as server:
        yield server


@pytest.fixture
def fake_model_process() -> Iterator[FakeModelProcess]:
    """The fake model server as its own process, for tests whose callers
    (Celery workers) run in other processes; read ``.requests`` over HTTP."""
    with FakeModelProcess() as server:
        yield server

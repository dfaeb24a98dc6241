"""Fixtures for the API tests: a few episodes in ``owner``'s ``session`` (root
conftest) and a session of another user's."""

from __future__ import annotations

import pytest

from tests.factories import ChatSessionFactory, EpisodeFactory


@pytest.fixture
def episodes(session):
    return EpisodeFactory.create_batch(3, session=session)


@pytest.fixture
def other_session(other_user):
    return ChatSessionFactory(owner=other_user, title="Someone else's")

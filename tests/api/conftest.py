"""Fixtures for the API tests: a session owned by ``owner`` with a few episodes."""

from __future__ import annotations

import pytest

from tests.factories import ChatSessionFactory, EpisodeFactory


@pytest.fixture
def session(owner):
    return ChatSessionFactory(owner=owner, title="Owned")


@pytest.fixture
def episodes(session):
    return EpisodeFactory.create_batch(3, session=session)


@pytest.fixture
def other_session(other_user):
    return ChatSessionFactory(owner=other_user, title="Someone else's")

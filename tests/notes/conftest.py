from __future__ import annotations

import pytest

from tests.factories import EpisodeFactory


@pytest.fixture
def write(django_capture_on_commit_callbacks):
    """An episode write with its after-commit work (the extraction task) run as after a real commit."""

    def write(session, user_input, response="Noted."):
        with django_capture_on_commit_callbacks(execute=True):
            return EpisodeFactory(session=session, user_input=user_input, response=response)

    return write

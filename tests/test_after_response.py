"""Without a broker, summarization a request asks for runs once its response
has been sent, not inside it: a bulk write of many episodes answers before
the model is called, and the runs happen when the response is closed."""

from __future__ import annotations

import json
import threading

import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.test import RequestFactory
from rest_framework.authtoken.models import Token

from nexus import after_response as kept
from nexus.after_response import after_response
from summaries.models import Summary

pytestmark = pytest.mark.django_db


class CountingClient:
    name = "counting"

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, prompt: str, **kwargs):
        from summaries.inference import Completion

        self.calls += 1
        return Completion(
            text=f"Summary {self.calls}.", model="m", prompt_tokens=1, completion_tokens=1, duration_ms=0
        )


def test_outside_a_request_work_is_not_kept():
    assert after_response(lambda: None) is False


def test_a_bulk_write_answers_before_its_summaries_are_made(
    owner, session, use_client, settings, django_capture_on_commit_callbacks
):
    settings.SUMMARY_THRESHOLD_TOKENS = 10
    assert settings.CELERY_TASK_ALWAYS_EAGER
    client = use_client(CountingClient())
    token = Token.objects.create(user=owner)
    items = [{"user_input": f"Question {n} about gardens?", "response": "An answer " * 40} for n in range(60)]
    request = RequestFactory().post(
        f"/api/sessions/{session.uuid}/episodes/",
        json.dumps(items),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {token.key}",
        HTTP_HOST="testserver",
    )
    # As a WSGI server does: the handler answers; the server sends the body,
    # then closes. (The test's transaction never commits: its after-commit
    # callbacks run as the block ends, still inside the request.)
    # Like the test client, keep the test's database connection open across the request.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            response = WSGIHandler()(request.environ, lambda status, headers: None)
        assert response.status_code == 201
        assert client.calls == 0 and not Summary.objects.filter(session=session).exists()
        response.close()
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
    assert client.calls > 1
    assert Summary.objects.filter(session=session).exists()


def in_a_request(*steps) -> threading.Thread:
    """Run ``steps`` in order on a thread of its own, as a server's request thread would."""
    thread = threading.Thread(target=lambda: [step() for step in steps], daemon=True)
    thread.start()
    return thread


def test_the_process_is_idle_only_once_the_work_kept_for_after_a_response_has_run():
    kept_work, release, ran = threading.Event(), threading.Event(), []

    def work() -> None:
        release.wait(10)
        ran.append("work")

    thread = in_a_request(
        lambda: request_started.send(sender=None),
        lambda: after_response(work),
        kept_work.set,
        # The server has sent the response: the client may be done with it already.
        lambda: request_finished.send(sender=None),
    )
    assert kept_work.wait(10)
    assert kept.wait_idle(0.2) is False
    release.set()
    assert kept.wait_idle(10) is True
    assert ran == ["work"]
    thread.join(10)


def test_a_response_never_closed_stops_counting_once_forgotten():
    opened, forget = threading.Event(), threading.Event()
    thread = in_a_request(
        lambda: request_started.send(sender=None), opened.set, lambda: forget.wait(10), kept.forget
    )
    assert opened.wait(10)
    assert kept.wait_idle(0.2) is False
    forget.set()
    assert kept.wait_idle(10) is True
    thread.join(10)

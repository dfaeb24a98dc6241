"""Send is free again as soon as a reply has streamed, even while the
summary that turn asked for is being written: background work runs on the
embedded worker, not on the thread that served the reply (whose connection
the page keeps)."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import expect

from nexus import embedded_worker
from sessions_app.models import Episode
from summaries.inference.offline import OfflineClient
from summaries.models import Summary
from tests.factories import ChatSessionFactory, UserFactory
from tests.web.conftest import sign_in

pytestmark = pytest.mark.django_db(transaction=True)

SUMMARY_SECONDS = 3.0


class SlowSummaries(OfflineClient):
    """The offline backend with summaries that take ``SUMMARY_SECONDS``."""

    def _complete(self, prompt, **kwargs):
        time.sleep(SUMMARY_SECONDS)
        return super()._complete(prompt, **kwargs)


@pytest.fixture
def running_worker(monkeypatch):
    """The embedded worker of a web process, running in the live server's process."""
    worker = embedded_worker.EmbeddedWorker()
    monkeypatch.setattr(embedded_worker, "worker", worker)
    worker.start()
    yield worker
    # Let the work end before the test database is flushed.
    worker.wait_idle(60)
    worker.stop(timeout=30)


def test_send_is_free_once_the_reply_has_streamed(open_page, live_server, settings, use_client, running_worker):
    settings.SUMMARY_THRESHOLD_TOKENS = 10
    settings.SUMMARY_MIN_EPISODES = 2
    use_client(SlowSummaries())
    owner = UserFactory(username="noor")
    session = ChatSessionFactory(owner=owner, title="Garden")
    page, recorder = open_page()
    sign_in(page, live_server, "noor")
    page.goto(f"{live_server.url}/sessions/{session.uuid}/")
    send_button = page.locator("#send-button")
    box = page.get_by_label("Message", exact=True)

    for turn in range(1, 5):
        box.fill(f"Turn {turn}: which shade plants flower in late summer?")
        box.press("Enter")
        expect(page.locator("#messages .episode:not(.is-pending)")).to_have_count(turn, timeout=30_000)
        # Free within a second of the reply, though a summary may take three.
        expect(send_button).to_be_enabled(timeout=1_000)
        expect(send_button).to_have_text("Send", timeout=1_000)
        if turn == 2:
            # The summary this turn asked for is still being written.
            assert not running_worker.wait_idle(0)

    assert Episode.objects.filter(session=session).count() == 4
    assert running_worker.wait_idle(60)
    assert Summary.objects.filter(session=session).exists()
    assert not recorder.page_errors
    page.wait_for_load_state("networkidle")

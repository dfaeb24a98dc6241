"""The chat page sends an ``Idempotency-Key`` with every turn, and the same
key when the same message is sent again after a failure: a turn the server
stored, but whose answer the network lost, is stored once."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from sessions_app.models import Episode
from tests.factories import ChatSessionFactory, UserFactory
from tests.web.conftest import sign_in

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_turn_sent_again_after_a_network_error_is_stored_once(open_page, live_server):
    owner = UserFactory(username="rosa")
    session = ChatSessionFactory(owner=owner, title="Garden")
    page, recorder = open_page()
    sign_in(page, live_server, "rosa")
    page.goto(f"{live_server.url}/sessions/{session.uuid}/")
    box = page.get_by_label("Message", exact=True)
    answered = page.locator("#messages .episode:not(.is-pending):not(.is-failed)")
    keys: list[str | None] = []

    def lose_the_first_answer(route) -> None:
        keys.append(route.request.headers.get("idempotency-key"))
        if len(keys) == 1:
            route.fetch()  # the server answers (and stores the turn); the page never hears it
            route.abort("connectionreset")
        else:
            route.continue_()

    page.route(f"**/api/sessions/{session.uuid}/chat/", lose_the_first_answer)

    box.fill("Where did I plant the garlic?")
    box.press("Enter")
    expect(page.locator("#messages .episode.is-failed .msg-error-text")).to_contain_text("Could not reach")
    expect(box).to_have_value("Where did I plant the garlic?")  # put back to be sent again
    assert Episode.objects.filter(session=session).count() == 1

    box.press("Enter")  # the same message again: the first answer comes back, nothing is stored twice
    expect(answered).to_have_count(1, timeout=30_000)
    assert Episode.objects.filter(session=session).count() == 1

    box.fill("And the onions?")
    box.press("Enter")
    expect(answered).to_have_count(2, timeout=30_000)
    assert Episode.objects.filter(session=session).count() == 2
    assert len(keys) == 3 and all(keys)
    assert keys[0] == keys[1] != keys[2]  # a new message, a new key
    assert not recorder.page_errors

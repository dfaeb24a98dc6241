"""What a chat remembers, switched in a real browser (Chromium through
Playwright, with the page's Content-Security-Policy in force): the new-chat
form's choice and the chat header's switch, and the memory they change."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from sessions_app.models import ChatSession
from sessions_app.services import episodes_bulk_create
from tests.factories import ChatSessionFactory, UserFactory
from tests.web.conftest import sign_in

pytestmark = pytest.mark.django_db(transaction=True)


def test_new_chat_form_and_header_switch(open_page, live_server, settings, artifacts_dir):
    settings.SESSION_MEMORY_DEFAULT = "shared"
    UserFactory(username="mira")
    page, recorder = open_page()
    sign_in(page, live_server, "mira")

    # The new-chat form: the default is chosen and visible; "This chat only" can be chosen instead.
    shared_choice = page.get_by_label("Remembers your other chats")
    alone_choice = page.get_by_label("This chat only")
    expect(shared_choice).to_be_visible()
    expect(shared_choice).to_be_checked()
    expect(alone_choice).not_to_be_checked()
    alone_choice.check()
    page.get_by_placeholder("Title (optional)").fill("Private notes")
    page.get_by_role("button", name="New session").click()
    page.wait_for_url(f"{live_server.url}/sessions/*/")
    private = ChatSession.objects.get(title="Private notes")
    assert private.memory_scope == "session"

    # The chat header says so, and switches it.
    switch = page.locator("#memory-switch")
    alone = switch.get_by_role("button", name="This chat only")
    shared = switch.get_by_role("button", name="Remembers your other chats")
    expect(alone).to_have_attribute("aria-pressed", "true")
    expect(shared).to_have_attribute("aria-pressed", "false")
    shared.click()
    expect(switch.get_by_role("button", name="Remembers your other chats")).to_have_attribute(
        "aria-pressed", "true"
    )
    private.refresh_from_db()
    assert private.memory_scope == "shared"
    switch.get_by_role("button", name="This chat only").click()
    expect(switch.get_by_role("button", name="This chat only")).to_have_attribute("aria-pressed", "true")
    private.refresh_from_db()
    assert private.memory_scope == "session"
    page.screenshot(path=str(artifacts_dir / "memory-switch.png"))
    assert recorder.page_errors == [] and recorder.console_errors == []


def test_the_inspector_names_what_another_chat_lent_and_opens_it_there(open_page, live_server, settings):
    settings.SUMMARY_THRESHOLD_TOKENS = 10**9  # history only
    owner = UserFactory(username="omar")
    trip = ChatSessionFactory(owner=owner, title="Trip planning", memory_scope="shared")
    items = [{"user_input": f"Garden note {n}.", "response": "Noted."} for n in range(30)]
    items.append({"user_input": "The zanzibar ferry leaves at nine-sharp.", "response": "Saved."})
    fact = episodes_bulk_create(session=trip, items=items)[-1]
    new = ChatSessionFactory(owner=owner, title="New chat", memory_scope="shared")
    page, recorder = open_page()
    sign_in(page, live_server, "omar")
    page.goto(f"{live_server.url}/sessions/{new.uuid}/")
    page.get_by_role("button", name="Context").click()
    page.locator("#context-question").fill("When does the zanzibar ferry leave?")
    page.get_by_role("button", name="Refresh").click()
    expect(page.locator("#context-prompt")).to_contain_text("From your other chats:")
    item = page.locator(f'#context-retrieved-list .context-retrieved-item[data-episode-id="{fact.pk}"]')
    expect(item).to_contain_text("#31 of another chat")
    link = item.get_by_role("link", name="Open in its chat")
    expect(link).to_have_attribute("href", f"/sessions/{trip.uuid}/#episode-{fact.pk}")
    link.click()
    page.wait_for_url(f"{live_server.url}/sessions/{trip.uuid}/*")
    expect(page.locator(f'.episode[data-episode-id="{fact.pk}"]')).to_be_visible()
    assert recorder.page_errors == [] and recorder.console_errors == []

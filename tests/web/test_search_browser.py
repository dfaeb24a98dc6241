"""The chat page's search box and the context inspector's retrieved
exchanges, in a real browser (Chromium through Playwright, against live_server),
with the page's Content-Security-Policy in force."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from sessions_app.services import episodes_bulk_create
from summaries.pages import HISTORY_PAGE_SIZE
from tests.factories import ChatSessionFactory, UserFactory
from tests.web.conftest import sign_in

pytestmark = pytest.mark.django_db(transaction=True)

TARGET = "Note <b>this</b>: the harbour ferry leaves at dawn from pier seventeen"


def filler(n: int) -> dict[str, str]:
    return {
        "user_input": f"Day {n}: what should I cook tonight?",
        "response": f"A quick pasta would do on day {n}.",
    }


def open_chat(open_page, live_server, session):
    page, recorder = open_page()
    sign_in(page, live_server, session.owner.username)
    page.goto(f"{live_server.url}/sessions/{session.uuid}/")
    return page, recorder


def test_search_finds_an_old_exchange_and_scrolls_to_it(open_page, live_server, settings, artifacts_dir):
    settings.SUMMARY_THRESHOLD_TOKENS = 10**9  # history only; no summaries needed
    gina = UserFactory(username="gina")
    # An earlier session's episodes, so the ids differ from the positions.
    episodes_bulk_create(session=ChatSessionFactory(owner=gina), items=[filler(n) for n in range(5)])
    session = ChatSessionFactory(owner=gina, title="Long one")
    items = [filler(n) for n in range(HISTORY_PAGE_SIZE * 2 + 10)]
    items[3] = {"user_input": TARGET, "response": "Then set an alarm for five."}
    target = episodes_bulk_create(session=session, items=items)[3]
    page, recorder = open_chat(open_page, live_server, session)
    expect(page.locator("#messages .episode")).to_have_count(HISTORY_PAGE_SIZE)
    assert page.locator(f'.episode[data-episode-id="{target.pk}"]').count() == 0

    box = page.get_by_label("Search this conversation")
    box.fill("When does the ferry leave?")
    box.press("Enter")
    hit = page.locator("#search-hits .search-hit-button").first
    expect(hit.locator("mark")).to_have_text(["ferry", "leaves"])  # stemmed: leave ~ leaves
    expect(hit.locator(".search-snippet")).to_have_text(TARGET)  # markup shown as text
    expect(page.locator("#search-state")).to_have_text("1 exchange matches.")
    expect(hit.locator(".search-meta")).to_contain_text("#4 · ")  # its position, not its id

    page.screenshot(path=str(artifacts_dir / "chat-search-results-desktop.png"))
    hit.click()
    exchange = page.locator(f'.episode[data-episode-id="{target.pk}"]')
    expect(exchange).to_be_in_viewport()
    expect(exchange).to_have_class("episode is-found")
    expect(exchange.locator(".msg-user .msg-body mark")).to_have_text(["ferry", "leaves"])
    expect(exchange.locator(".msg-user .msg-body")).to_have_text(TARGET)
    expect(exchange.locator(".msg-meta")).to_contain_text("#4 · ")
    # Earlier history was loaded to reach it, contiguous.
    expect(page.locator("#messages .episode").first).to_have_attribute("data-episode-id", str(target.pk - 3))
    assert page.locator("main b").count() == 0
    page.screenshot(path=str(artifacts_dir / "chat-search-found-desktop.png"))

    # A query with nothing to search for says so; Escape closes the list.
    box.fill("the and of")
    box.press("Enter")
    expect(page.locator("#search-state")).to_contain_text("Nothing to search for")
    box.press("Escape")
    expect(page.locator("#search-results")).to_be_hidden()
    assert recorder.page_errors == []
    assert [e for e in recorder.console_errors if "400" not in e] == []


def test_inspector_shows_the_retrieved_exchanges_apart(open_page, live_server, settings, artifacts_dir):
    settings.SUMMARY_THRESHOLD_TOKENS = 10**9
    session = ChatSessionFactory(owner=UserFactory(username="hugo"), title="Dogs")
    items = [filler(n) for n in range(20)]
    items[2] = {"user_input": "I adopted a greyhound called Comet", "response": "What a lovely name."}
    target = episodes_bulk_create(session=session, items=items)[2]
    page, recorder = open_chat(open_page, live_server, session)

    page.get_by_role("button", name="Context").click()
    page.locator("#context-question").fill("What is my greyhound called?")
    page.get_by_role("button", name="Refresh").click()
    section = page.locator("#context-retrieved")
    expect(section).to_be_visible()
    expect(page.locator("#context-retrieved-count")).to_have_text("1")
    item = section.locator(f'.context-retrieved-item[data-episode-id="{target.pk}"]')
    expect(item).to_contain_text("I adopted a greyhound called Comet")
    expect(page.locator("#context-parts")).to_contain_text("1 relevant earlier exchange")
    expect(page.locator("#context-prompt")).to_contain_text("Relevant earlier exchanges:")
    page.screenshot(path=str(artifacts_dir / "context-inspector-retrieved-desktop.png"))

    # Named by its position in the session (the third exchange), not its id.
    item.get_by_role("button", name="#3").click()
    expect(page.locator("#context-dialog")).to_be_hidden()
    expect(page.locator(f'.episode[data-episode-id="{target.pk}"]')).to_be_in_viewport()
    assert recorder.page_errors == []
    assert recorder.console_errors == []

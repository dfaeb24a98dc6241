"""The context inspector shows what of each quoted exchange went into the
context: a long one by its passages with the cuts marked (…), the newest
exchange by its newest part when alone it is over the window's share, what
was left out and why, and a link to the whole exchange. In a real browser
(Chromium through Playwright, against live_server), CSP in force."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from sessions_app.services import episodes_bulk_create
from summaries.pages import HISTORY_PAGE_SIZE
from tests.factories import ChatSessionFactory, UserFactory
from tests.web.conftest import sign_in

pytestmark = pytest.mark.django_db(transaction=True)

FILLER = [
    "The build pipeline runs the linters before the unit tests.",
    "Caching the dependencies saves about a minute on each run 🚀.",
    "Logs are kept for thirty days and then rotated away.",
    "The staging server mirrors production settings closely.",
    "Deployments happen after the review has been approved.",
]
FACT = "My sister Ines moved to Porto last spring with her two cats."
REPLY_FACT = "Porto has good trains, so Ines can visit Lisbon often."
ENDING = "Last of all, the release notes go out on Thursday morning."


def long_text(lead: str, fact: str, repeat: int = 8) -> str:
    """Many sentences of filler with ``fact`` in the middle; an emoji in them
    (one character to the server, two code units to the browser)."""
    sentences = [f"{lead} {n}: {line}" for n in range(repeat) for line in FILLER]
    sentences.insert(len(sentences) // 2, fact)
    return " ".join(sentences)


def chatter(n: int) -> dict[str, str]:
    return {"user_input": f"Quick check {n}: is the pipeline green?", "response": f"Yes, run {n} passed."}


@pytest.fixture
def quoted_session(settings):
    settings.SUMMARY_THRESHOLD_TOKENS = 10**9  # history only; no summaries needed
    settings.CONTEXT_PASSAGE_TOKENS = 150
    session = ChatSessionFactory(owner=UserFactory(username="ines"), title="Family")
    items = [chatter(n) for n in range(HISTORY_PAGE_SIZE + 10)]
    items[2] = {"user_input": long_text("Note", FACT), "response": long_text("Reply", REPLY_FACT)}
    # The newest exchange is longer than the recent window's share (0.3 of 2,000 tokens).
    items[-1] = {
        "user_input": "What is left before the release?",
        "response": long_text("Step", "Check the changelog twice.", repeat=14) + " " + ENDING,
    }
    episodes = episodes_bulk_create(session=session, items=items)
    return session, episodes[2], episodes[-1]


def test_a_long_exchange_shows_its_passages_and_links_to_the_whole(
    open_page, live_server, quoted_session, artifacts_dir
):
    session, long, newest = quoted_session
    page, recorder = open_page()
    sign_in(page, live_server, session.owner.username)
    page.goto(f"{live_server.url}/sessions/{session.uuid}/")
    # The long exchange is older than the history the page shows.
    assert page.locator(f'.episode[data-episode-id="{long.pk}"]').count() == 0

    question = "Where did Ines move to?"
    page.get_by_role("button", name="Context").click()
    page.locator("#context-question").fill(question)
    page.get_by_role("button", name="Refresh").click()
    context = page.request.get(
        f"{live_server.url}/api/sessions/{session.uuid}/context/", params={"question": question}
    ).json()
    assert long.pk in context["retrieved"]
    spans = context["passages"][str(long.pk)]
    whole = long.user_input + long.response

    item = page.locator(f'#context-retrieved-list .context-retrieved-item[data-episode-id="{long.pk}"]')
    expect(item).to_contain_text(f"Quoted by {len(spans)} passage")
    quote = item.locator(".context-quote")
    # Only its passages, the very text the offsets name, in order, each cut marked.
    expect(quote.locator(".context-passage")).to_have_text([whole[s:e] for s, e in spans])
    expect(quote).to_contain_text(FACT)
    expect(quote).to_contain_text(REPLY_FACT)
    shown = quote.inner_text()
    assert long.user_input not in shown and long.response not in shown
    assert "Note 0: The build pipeline" not in shown
    expect(quote.locator(".context-cut")).not_to_have_count(0)
    assert set(quote.locator(".context-cut").all_inner_texts()) == {"…"}
    expect(quote.locator(".context-quote-label")).to_have_text(["Q:", "A:"])

    # The newest exchange, over its share, by its newest part: the message and the end of the reply.
    newest_item = page.locator(f'#context-newest-list .context-retrieved-item[data-episode-id="{newest.pk}"]')
    expect(page.locator("#context-newest")).to_be_visible()
    newest_quote = newest_item.locator(".context-quote")
    expect(newest_quote.locator(".context-quote-side").first).to_have_text(f"Q: {newest.user_input}")
    expect(newest_quote.locator(".context-quote-side").last).to_contain_text(ENDING)
    expect(newest_quote.locator(".context-quote-side").last.locator(".context-cut")).to_have_count(1)
    assert "Step 0: The build pipeline" not in newest_quote.inner_text()
    expect(page.locator("#context-parts")).to_contain_text("the newest in part")
    # What was left out, and why: the window's older exchanges beyond its share.
    left = len(context["omitted"]["recent"])
    assert left >= 1
    expect(page.locator('#context-omitted li[data-reason="recent"]')).to_contain_text(
        f"Only part of the budget goes to the latest exchanges: {left} of them did not fit there"
    )
    # Nothing ranked fell under the relevance floor: no line for it.
    assert context["omitted"]["below_floor"] == []
    expect(page.locator('#context-omitted li[data-reason="floor"]')).to_have_count(0)
    page.screenshot(path=str(artifacts_dir / "context-inspector-passages-desktop.png"))

    # The link opens the whole exchange: earlier history is loaded until it is shown.
    link = item.get_by_role("link", name="Whole exchange")
    expect(link).to_have_attribute("href", f"#episode-{long.pk}")
    link.click()
    expect(page.locator("#context-dialog")).to_be_hidden()
    exchange = page.locator(f"#episode-{long.pk}")
    expect(exchange).to_be_in_viewport()
    expect(exchange.locator(".msg-user .msg-body")).to_have_text(long.user_input)
    expect(exchange.locator(".msg-assistant .msg-body")).to_have_text(long.response)
    expect(exchange).to_have_class("episode is-found")
    # The quoted passages are marked in it (the offsets count characters; the emoji before them is one).
    split = len(long.user_input)
    expect(exchange.locator(".msg-user .msg-body mark")).to_have_text(
        [whole[s:e] for s, e in spans if e <= split]
    )
    expect(exchange.locator(".msg-assistant .msg-body mark")).to_have_text(
        [whole[s:e] for s, e in spans if s >= split]
    )
    assert page.evaluate("window.location.hash") == f"#episode-{long.pk}"
    page.screenshot(path=str(artifacts_dir / "context-inspector-whole-exchange-desktop.png"))
    assert recorder.page_errors == []
    assert recorder.console_errors == []


def test_the_whole_exchange_address_opens_it(open_page, live_server, quoted_session):
    session, long, _ = quoted_session
    page, recorder = open_page()
    sign_in(page, live_server, session.owner.username)
    # Opened by its address (a link opened in a new tab, or kept): shown once loaded.
    page.goto(f"{live_server.url}/sessions/{session.uuid}/#episode-{long.pk}")
    exchange = page.locator(f"#episode-{long.pk}")
    expect(exchange).to_be_in_viewport()
    expect(exchange.locator(".msg-assistant .msg-body")).to_have_text(long.response)
    assert recorder.page_errors == []
    assert recorder.console_errors == []

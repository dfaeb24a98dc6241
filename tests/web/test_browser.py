"""The chat pages in a real browser (Chromium through Playwright, against live_server).

The embedded defaults apply: the offline inference backend and summarization
tasks run in-process right after the episode's commit. In that set-up the
summary of a turn runs before the turn's stream closes, so the page can
watch the session's state go to running and back to idle while it waits.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest
from django.db import OperationalError
from playwright.sync_api import expect

from sessions_app.models import ChatSession, Episode
from summaries.inference import PermanentInferenceError
from summaries.inference.base import ChatStream
from summaries.inference.offline import OfflineClient
from summaries.context import full_history_tokens
from summaries.models import Summary
from summaries.pages import HISTORY_PAGE_SIZE
from summaries.selectors import FAILURE_FOR_USERS
from tests.factories import ChatSessionFactory, EpisodeFactory, SummaryFactory, UserFactory
from tests.fake_model_server import closed_port_url
from tests.process_support import wait_for
from tests.web.conftest import PASSWORD, PHONE, sign_in

pytestmark = pytest.mark.django_db(transaction=True)

MESSAGES = [
    "We are planning a four day trip to Lisbon in early May with two children aged six and nine.",
    "Which neighbourhoods are easiest to stay in without a car, close to trams and the metro?",
    "What should we see on the first day if we arrive at noon and the kids are tired from the flight?",
    "Are there good day trips by train, for example to Sintra or Cascais, and how early should we leave?",
    "Finally, which local dishes would children enjoy, and where can we try pastel de nata fresh?",
]


class SlowOffline(OfflineClient):
    """The offline backend taking its time: ``stream_delay`` between reply
    chunks (so the page's partial rendering can be seen) and ``summary_delay``
    per summarization call (so the queued/running state can be seen); with
    ``summary_error`` each summarization call fails with it after the delay."""

    def __init__(
        self, *, stream_delay: float = 0.0, summary_delay: float = 0.0, summary_error: Exception | None = None
    ) -> None:
        self.stream_delay = stream_delay
        self.summary_delay = summary_delay
        self.summary_error = summary_error

    def _chat_stream(self, messages, **kwargs):
        inner = super()._chat_stream(messages, **kwargs)

        def chunks():
            for chunk in inner:
                time.sleep(self.stream_delay)
                yield chunk

        return ChatStream(chunks(), lambda text: inner.completion)

    def _complete(self, prompt, **kwargs):
        time.sleep(self.summary_delay)
        if self.summary_error is not None:
            raise self.summary_error
        return super()._complete(prompt, **kwargs)


@pytest.fixture
def slow_offline(use_client) -> Iterator:
    """``slow_offline(stream_delay=..., summary_delay=...)`` makes a
    ``SlowOffline`` the configured model client (through the backend registry)."""

    def apply(**delays) -> SlowOffline:
        return use_client(SlowOffline(**delays))

    yield apply


def open_chat(open_page, live_server, session: ChatSession, **page_options):
    """A page signed in as ``session``'s owner, on that session's chat window: (page, recorder)."""
    page, recorder = open_page(**page_options)
    sign_in(page, live_server, session.owner.username)
    page.goto(f"{live_server.url}/sessions/{session.uuid}/")
    return page, recorder


def send(page, text: str) -> None:
    box = page.get_by_label("Message", exact=True)
    box.fill(text)
    box.press("Enter")


def wait_for_turns(page, count: int) -> None:
    expect(page.locator("#messages .episode:not(.is-pending)")).to_have_count(count, timeout=30_000)


WATCH_STATES = """
() => {
  window.__states = [];
  const layout = document.getElementById("chat-layout");
  new MutationObserver(() => window.__states.push(layout.dataset.summaryState))
    .observe(layout, {attributes: true, attributeFilter: ["data-summary-state"]});
}
"""


def test_chat_end_to_end(open_page, live_server, slow_offline, artifacts_dir):
    owner = UserFactory(username="alice")
    slow_offline(stream_delay=0.04, summary_delay=2.5)
    page, recorder = open_page()

    sign_in(page, live_server, "alice")
    expect(page.get_by_text("No sessions yet")).to_be_visible()
    page.get_by_label("Title of the new session").fill("Trip to Lisbon")
    page.get_by_role("button", name="New session").click()
    page.wait_for_url(re.compile(r"/sessions/[0-9a-f-]{36}/$"))
    session = ChatSession.objects.get(owner=owner)
    assert session.title == "Trip to Lisbon"
    expect(page.locator("#empty-chat")).to_be_visible()
    expect(page.locator("#summaries-empty")).to_be_visible()

    # First turn: the reply shows up piece by piece while the stream is open.
    send(page, MESSAGES[0])
    streaming = page.locator(".msg-assistant.is-streaming .msg-body")
    expect(streaming).to_contain_text("[offline]", timeout=15_000)
    partial = streaming.inner_text()
    wait_for_turns(page, 1)
    final = page.locator("#messages .episode .msg-assistant .msg-body").first.inner_text()
    assert len(partial) < len(final)
    assert final.startswith(partial.strip())
    first = Episode.objects.get(session=session)
    assert page.locator("#messages .episode").first.get_attribute("data-episode-id") == str(first.pk)
    expect(page.locator("#empty-chat")).to_be_hidden()
    expect(page.locator("#stat-episodes")).to_have_text("1")
    # The header counts exchanges, as the summary cards do, in the singular for one.
    expect(page.locator(".chat-stats")).to_contain_text("1 exchange ·")

    # Shift+Enter breaks the line instead of sending.
    box = page.get_by_label("Message", exact=True)
    box.fill("Line one")
    box.press("Shift+Enter")
    box.type("line two")
    assert box.input_value() == "Line one\nline two"
    box.fill("")

    for index, text in enumerate(MESSAGES[1:4], start=2):
        send(page, text)
        wait_for_turns(page, index)
    assert not Summary.objects.filter(session=session).exists()
    expect(page.locator("#header-indicator")).to_be_hidden()

    # The fifth turn passes the threshold: the summary runs (slowly) and the
    # page shows it from the session's real state, then clears it.
    page.evaluate(WATCH_STATES)
    send(page, MESSAGES[4])
    expect(page.locator("#header-indicator")).to_be_visible(timeout=15_000)
    expect(page.locator("#button-indicator")).to_be_visible()
    expect(page.locator("#header-indicator")).to_have_text(re.compile("Summarising…"))
    wait_for_turns(page, 5)
    expect(page.locator("#header-indicator")).to_be_hidden(timeout=15_000)
    expect(page.locator("#button-indicator")).to_be_hidden()

    summary = Summary.objects.get(session=session)
    episodes = list(Episode.objects.filter(session=session).order_by("pk"))
    assert (summary.first_episode_id, summary.last_episode_id) == (episodes[0].pk, episodes[-1].pk)
    cards = page.locator("#summary-cards .summary-card")
    expect(cards).to_have_count(1)
    expect(cards.first.locator(".summary-range")).to_have_text("Exchanges 1–5")
    # The streamed reply names its stored exchange by its position.
    expect(page.locator("#messages .episode").last.locator(".msg-meta")).to_contain_text("#5 · ")
    expect(cards.first.locator(".summary-text")).to_have_text(summary.content)
    expect(cards.first).to_contain_text(f"{summary.token_count} tokens")
    expect(page.locator("#summaries-empty")).to_be_hidden()
    states = page.evaluate("window.__states")
    assert "running" in states or "queued" in states, states
    assert states[-1] == "idle", states
    status = page.request.get(f"{live_server.url}/api/sessions/{session.uuid}/summary-status/").json()
    assert status["state"] == "idle"
    page.screenshot(path=str(artifacts_dir / "chat-after-summary-desktop.png"))

    # The inspector shows what the next message would be sent with.
    page.get_by_label("Message", exact=True).fill("What about museums?")
    page.get_by_role("button", name="Context").click()
    dialog = page.locator("#context-dialog")
    expect(dialog).to_be_visible()
    expect(page.locator("#context-question")).to_have_value("What about museums?")
    expect(page.locator("#context-prompt")).to_contain_text("What about museums?")
    expect(page.locator("#context-prompt")).to_contain_text(MESSAGES[4])
    context = page.request.get(
        f"{live_server.url}/api/sessions/{session.uuid}/context/?question=What%20about%20museums%3F"
    ).json()
    expect(page.locator("#context-tokens")).to_have_text(str(context["token_count"]))
    # The inspector's "Full history" is the header's figure: one per session on the page.
    session.refresh_from_db()
    expect(page.locator("#context-full")).to_have_text(str(session.cached_total_tokens))
    expect(page.locator("#stat-tokens")).to_have_text(str(session.cached_total_tokens))
    expect(page.locator("#context-full")).to_have_attribute("title", re.compile(f"{context['full_history_tokens']} tokens"))
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()

    assert recorder.page_errors == []
    assert recorder.console_errors == []
    assert recorder.dialogs == []


def test_chat_with_a_model_server(open_page, live_server, settings, fake_model):
    """The same page against a model server (the fake one, speaking Ollama's
    API with a delay on every answer): the reply streams over HTTP, and the
    summary card carries the utility model's text."""
    settings.INFERENCE_BACKEND = "ollama"
    settings.INFERENCE_SERVICE_URL = fake_model.url
    settings.SUMMARY_THRESHOLD_TOKENS = 100  # the fake's replies are short
    fake_model.set_mode("ok", latency=1.0)
    owner = UserFactory(username="ivan")
    session = ChatSessionFactory(owner=owner, title="With a model")
    page, recorder = open_chat(open_page, live_server, session)

    send(page, MESSAGES[0])
    # While the model has not answered yet, the reply shows a typing mark.
    expect(page.locator(".msg-assistant.is-streaming .typing")).to_be_visible()
    wait_for_turns(page, 1)
    first = Episode.objects.get(session=session)
    expect(page.locator("#messages .msg-assistant .msg-body").first).to_have_text(first.response)
    assert re.fullmatch(r"Summary of \d+ exchanges \[[0-9a-f]{8}\]\.", first.response)

    for index, text in enumerate(MESSAGES[1:4], start=2):
        send(page, text)
        wait_for_turns(page, index)
    page.evaluate(WATCH_STATES)
    fake_model.set_mode("ok", latency=2.5)  # the page polls each second: let it see the run
    send(page, MESSAGES[4])
    expect(page.locator("#header-indicator")).to_be_visible(timeout=15_000)
    wait_for_turns(page, 5)
    expect(page.locator("#header-indicator")).to_be_hidden(timeout=15_000)

    summary = Summary.objects.get(session=session)
    assert summary.model == settings.UTILITY_MODEL
    card = page.locator("#summary-cards .summary-card")
    expect(card.locator(".summary-range")).to_have_text(f"Exchanges 1–{summary.last_position}")
    expect(card.locator(".summary-text")).to_have_text(summary.content)
    assert re.fullmatch(r"Summary of 5 exchanges \[[0-9a-f]{8}\]\.", summary.content)
    assert page.evaluate("window.__states")[-1] == "idle"
    paths = [r["path"] for r in fake_model.requests]
    assert paths.count("/api/chat") == 6  # five replies and one summary
    assert recorder.page_errors == []
    assert recorder.console_errors == []


def test_cards_follow_a_summary_made_elsewhere(open_page, live_server):
    """A run the page did not start (another client asked for it) still
    refreshes the cards on the next status poll."""
    owner = UserFactory(username="jules")
    session = ChatSessionFactory(owner=owner, title="Summarized from the API")
    for text in MESSAGES[:3]:
        EpisodeFactory(session=session, user_input=text, response=f"A thorough answer to: {text}")
    page, recorder = open_chat(open_page, live_server, session)
    expect(page.locator("#summary-status-line")).to_have_text("3 exchanges not summarised yet.")
    expect(page.locator("#summaries-empty")).to_be_visible()

    csrf = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    answer = page.request.post(
        f"{live_server.url}/api/sessions/{session.uuid}/summarize/", headers={"X-CSRFToken": csrf}
    )
    assert answer.status == 202, answer.text()
    # Without a broker the run goes once the 202 has been sent.
    summary = wait_for(
        lambda: Summary.objects.filter(session=session).first(),
        timeout=20,
        message="the summary row",
        retry_on=(OperationalError,),  # SQLite: the server thread may be writing the table
    )

    # Coming back to the tab polls at once (otherwise the next idle poll would).
    page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")
    card = page.locator("#summary-cards .summary-card")
    expect(card.locator(".summary-range")).to_have_text("Exchanges 1–3")
    expect(page.locator("#summary-status-line")).to_have_text("Up to date.")
    expect(page.locator("#summaries-empty")).to_be_hidden()
    assert recorder.page_errors == []
    assert recorder.console_errors == []


def test_failed_summary_is_shown_plainly(open_page, live_server, slow_offline, artifacts_dir):
    owner = UserFactory(username="hana")
    session = ChatSessionFactory(owner=owner, title="Summaries fail")
    for text in MESSAGES[:4]:
        EpisodeFactory(session=session, user_input=text, response=f"A thorough answer to: {text}")

    slow_offline(
        summary_delay=2.5,  # long enough for the page, polling each second, to see the run
        summary_error=PermanentInferenceError(
            "utility model answered 400: context length exceeded", backend="offline"
        ),
    )
    page, recorder = open_chat(open_page, live_server, session, viewport=PHONE)
    expect(page.locator("#summary-status-line")).to_have_text("4 exchanges not summarised yet.")

    send(page, MESSAGES[4])
    expect(page.locator("#header-indicator")).to_be_visible(timeout=15_000)
    expect(page.locator("#button-indicator")).to_be_visible()
    page.screenshot(path=str(artifacts_dir / "chat-summarising-phone.png"))
    wait_for_turns(page, 5)

    failed = page.locator("#header-failed")
    expect(failed).to_be_visible(timeout=15_000)
    expect(page.locator("#header-indicator")).to_be_hidden()
    # The owner reads what kind of failure it was; the model's own answer is for staff.
    said = FAILURE_FOR_USERS["PermanentInferenceError"]
    expect(failed).to_have_attribute("title", said)
    page.get_by_role("button", name="Session memory").click()
    expect(page.locator("#summary-error")).to_be_visible()
    expect(page.locator("#summary-error-text")).to_contain_text(said)
    expect(page.locator("#summary-error-text")).not_to_contain_text("context length exceeded")
    page.screenshot(path=str(artifacts_dir / "chat-summary-failed-phone.png"))
    status = page.request.get(f"{live_server.url}/api/sessions/{session.uuid}/summary-status/").json()
    assert status["state"] == "failed"
    assert status["last_error"] == said
    assert recorder.page_errors == []
    assert recorder.console_errors == []


def test_inspector_shows_savings(open_page, live_server, artifacts_dir):
    owner = UserFactory(username="bea")
    session = ChatSessionFactory(owner=owner, title="Long conversation")
    detail = " ".join(
        f"Point {n} adds another consideration about budgets, timing and trade-offs." for n in range(8)
    )
    for n in range(20):
        # Each write commits and may fold older episodes into a summary.
        EpisodeFactory(session=session, user_input=f"Question {n}: what else matters here?", response=detail)
    assert Summary.objects.filter(session=session).exists()
    page, recorder = open_chat(open_page, live_server, session)
    page.get_by_role("button", name="Context").click()
    expect(page.locator("#context-result")).to_be_visible()
    tokens = int(page.locator("#context-tokens").inner_text())
    expect(page.locator("#context-full")).to_have_text(page.locator("#stat-tokens").inner_text())
    session.refresh_from_db()
    full = full_history_tokens(session=session, question=page.locator("#context-question").input_value())
    assert 0 < tokens < full
    expect(page.locator("#context-saving")).to_have_text(
        f"{full - tokens} tokens ({round((full - tokens) / full * 100)}%)"
    )
    expect(page.locator("#context-parts")).to_contain_text(re.compile(r"\d+ summar"))
    # The window in full as far as its share of the budget goes (the context endpoint's count).
    asked = page.locator("#context-question").input_value()
    context = page.request.get(
        f"{live_server.url}/api/sessions/{session.uuid}/context/", params={"question": asked}
    ).json()
    assert 1 <= len(context["recent"]) <= 8
    expect(page.locator("#context-parts")).to_contain_text(f"{len(context['recent'])} recent exchanges in full")
    page.screenshot(path=str(artifacts_dir / "context-inspector-desktop.png"))
    page.get_by_role("button", name="Close", exact=True).click()
    expect(page.locator("#context-dialog")).to_be_hidden()
    assert recorder.page_errors == []
    assert recorder.console_errors == []


def test_model_down_shows_the_error_in_the_conversation(open_page, live_server, settings):
    owner = UserFactory(username="carl")
    session = ChatSessionFactory(owner=owner, title="No model")
    settings.INFERENCE_BACKEND = "ollama"
    settings.INFERENCE_SERVICE_URL = closed_port_url()
    page, _ = open_chat(open_page, live_server, session)

    send(page, "Is anybody there?")
    error = page.locator("#messages .episode.is-failed .msg-error-text")
    expect(error).to_contain_text("not available", timeout=30_000)
    expect(page.locator("#messages .episode.is-failed .msg-user")).to_contain_text("Not saved")
    # The message is put back so it can be sent again.
    expect(page.get_by_label("Message", exact=True)).to_have_value("Is anybody there?")
    assert not Episode.objects.filter(session=session).exists()


def test_session_gone(open_page, live_server):
    owner = UserFactory(username="dora")
    session = ChatSessionFactory(owner=owner, title="Short-lived")
    page, _ = open_chat(open_page, live_server, session)
    expect(page.locator("#empty-chat")).to_be_visible()

    ChatSession.objects.filter(pk=session.pk).delete()
    send(page, "Hello?")
    alert = page.locator("#session-alert")
    expect(alert).to_contain_text("This session no longer exists.")
    expect(alert.get_by_role("link", name="Back to your sessions")).to_have_attribute("href", "/")
    expect(page.get_by_label("Message", exact=True)).to_be_disabled()


def test_signed_out_while_chatting(open_page, live_server):
    owner = UserFactory(username="kim")
    session = ChatSessionFactory(owner=owner, title="Long lunch")
    page, _ = open_chat(open_page, live_server, session)
    expect(page.locator("#empty-chat")).to_be_visible()

    page.context.clear_cookies()  # as if the sign-in expired
    send(page, "Still there?")
    alert = page.locator("#session-alert")
    expect(alert).to_contain_text("You are signed out.")
    link = alert.get_by_role("link", name="Sign in again")
    expect(link).to_have_attribute("href", f"/accounts/login/?next=%2Fsessions%2F{session.uuid}%2F")
    expect(page.locator("#messages .episode.is-failed")).to_have_count(1)
    expect(page.get_by_label("Message", exact=True)).to_be_disabled()
    assert not Episode.objects.filter(session=session).exists()

    link.click()
    page.get_by_label("Username").fill("kim")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{live_server.url}/sessions/{session.uuid}/")
    expect(page.locator("#empty-chat")).to_be_visible()
    # The page asks for the summary status once loaded: let that request end
    # before the test database is flushed (SQLite's tables lock while it reads).
    page.wait_for_load_state("networkidle")


def test_list_page_create_rename_delete(open_page, live_server):
    owner = UserFactory(username="erin")
    ChatSessionFactory(owner=owner, title="Keep me")
    page, _ = open_page(viewport=PHONE)
    sign_in(page, live_server, "erin")

    page.get_by_label("Title of the new session").fill("Temporary")
    page.get_by_label("Title of the new session").press("Enter")
    page.wait_for_url(re.compile(r"/sessions/"))
    page.get_by_role("link", name="All sessions").click()
    page.wait_for_url(f"{live_server.url}/")

    row = page.locator(".session-row", has_text="Temporary")
    row.get_by_text("Rename").click()
    row.get_by_label("New title").fill("Renamed")
    row.get_by_role("button", name="Save").click()
    expect(page.locator(".flash")).to_have_text("Session renamed.")
    expect(page.locator(".session-title", has_text="Renamed")).to_be_visible()

    page.locator(".session-row", has_text="Renamed").get_by_role("link", name="Delete").click()
    page.get_by_role("button", name="Delete session").click()
    page.wait_for_url(f"{live_server.url}/")
    expect(page.locator(".session-title")).to_have_count(1)
    assert list(ChatSession.objects.filter(owner=owner).values_list("title", flat=True)) == ["Keep me"]


XSS_SCRIPT = "<script>window.__xss = 'script'</script>"
XSS_IMG = "<img src=x onerror=\"window.__xss = 'img'\">"


def test_user_and_model_text_never_runs(open_page, live_server, settings):
    """Markup in episodes, summaries and the composer is shown as text, on
    every path that puts it on the page. The browser ignores the page's
    Content-Security-Policy here, so only the escaping stands in the way."""
    settings.SUMMARY_THRESHOLD_TOKENS = 10**9  # only the hand-made row below, for now
    owner = UserFactory(username="frank")
    session = ChatSessionFactory(owner=owner, title=XSS_IMG)
    episodes = [
        EpisodeFactory(session=session, user_input=f"{XSS_SCRIPT} #{n}", response=f"{XSS_IMG} #{n}")
        for n in range(HISTORY_PAGE_SIZE + 3)
    ]
    SummaryFactory(
        session=session,
        content=f"{XSS_SCRIPT} and {XSS_IMG}",
        first_episode_id=episodes[0].pk,
        last_episode_id=episodes[4].pk,
    )
    page, recorder = open_chat(open_page, live_server, session, bypass_csp=True)

    # Server-rendered history and cards.
    expect(page.locator("#messages .episode")).to_have_count(HISTORY_PAGE_SIZE)
    expect(page.locator("#chat-title")).to_have_text(XSS_IMG)
    expect(page.locator("#summary-cards .summary-text").first).to_have_text(f"{XSS_SCRIPT} and {XSS_IMG}")

    # Episodes loaded through the API.
    page.get_by_role("button", name="Load earlier messages").click()
    expect(page.locator("#messages .episode")).to_have_count(len(episodes))
    expect(page.locator("#messages .episode").first.locator(".msg-user")).to_have_text(f"{XSS_SCRIPT} #0")
    expect(page.get_by_role("button", name="Load earlier messages")).to_be_hidden()

    # Typed and streamed text. This turn also gets the rest summarized: the
    # digest quotes the markup, and the script renders the new cards.
    settings.SUMMARY_THRESHOLD_TOKENS = 200
    send(page, f"{XSS_IMG} typed")
    wait_for_turns(page, len(episodes) + 1)
    expect(page.locator("#messages .episode").last.locator(".msg-user .msg-body")).to_have_text(
        f"{XSS_IMG} typed"
    )
    # The row was not curated, so it is updated cumulatively: its range grows
    # and its text now quotes later episodes' markup too.
    # Without a broker the run goes once the turn's stream has been sent.
    row = wait_for(
        lambda: Summary.objects.filter(session=session, last_episode_id__gt=episodes[4].pk).first(),
        timeout=20,
        message="the cumulative update",
        retry_on=(OperationalError,),  # SQLite: the server thread may be writing the table
    )
    assert row.last_episode_id > episodes[4].pk
    card = page.locator("#summary-cards .summary-card")
    expect(card.locator(".summary-range")).to_have_text(f"Exchanges 1–{row.last_position}")
    expect(card.locator(".summary-text")).to_have_text(row.content)
    expect(card.locator(".summary-text")).to_contain_text(f"{XSS_SCRIPT} and {XSS_IMG}")
    expect(card.locator(".summary-text")).to_contain_text(f"{XSS_SCRIPT} #")

    # The context inspector quotes all of it.
    page.get_by_role("button", name="Context").click()
    expect(page.locator("#context-prompt")).to_contain_text("<img src=x onerror=")

    assert page.evaluate("window.__xss") is None
    assert page.locator("main img, main script").count() == 0
    assert recorder.dialogs == []
    assert recorder.page_errors == []
    assert recorder.console_errors == []


def test_screenshots(open_page, live_server, artifacts_dir, settings):
    """The session list and the chat window at desktop and phone widths,
    saved into test-artifacts/ for people to look at."""
    settings.SUMMARY_THRESHOLD_TOKENS = 10**9  # the rows below are the only ones
    owner = UserFactory(username="gina")
    ChatSessionFactory(owner=owner, title="Garden irrigation ideas")
    lisbon = ChatSessionFactory(owner=owner, title="Trip to Lisbon")
    untitled = ChatSessionFactory(owner=owner, title="")
    pairs = [
        (
            MESSAGES[0],
            (
                "Lisbon is very walkable for families if you stay central. Baixa and Chiado are flat-ish, "
                "well served by trams and metro, and close to the river."
            ),
        ),
        (
            MESSAGES[1],
            (
                "Baixa, Chiado and Príncipe Real are the easiest. Avoid steep Alfama streets with a "
                "stroller; tram 28 is fun but crowded."
            ),
        ),
        (
            MESSAGES[2],
            (
                "Keep day one gentle: a late lunch in Baixa, the Santa Justa lift, then an early "
                "evening at the riverside Ribeira das Naus."
            ),
        ),
        (
            MESSAGES[3],
            (
                "Sintra is 40 minutes by train from Rossio; leave before 9 to beat the queues. "
                "Cascais is an easy beach afternoon from Cais do Sodré."
            ),
        ),
        (
            MESSAGES[4],
            (
                "Try bifanas, grilled chicken and of course pastel de nata, warm from Manteigaria "
                "near Chiado.\nMost kids love the custard tarts with cinnamon."
            ),
        ),
    ]
    episodes = [EpisodeFactory(session=lisbon, user_input=q, response=a) for q, a in pairs]
    SummaryFactory(
        session=lisbon,
        content="The user is planning a four-day family trip to Lisbon in May with two children and asked "
        "where to stay without a car. The assistant recommended Baixa and Chiado for trams and metro.",
        first_episode_id=episodes[0].pk,
        last_episode_id=episodes[1].pk,
        curated=True,
    )
    SummaryFactory(
        session=lisbon,
        content="They discussed a gentle first day and train day trips to Sintra and Cascais, leaving early.",
        first_episode_id=episodes[2].pk,
        last_episode_id=episodes[3].pk,
    )

    for name, viewport in [("desktop", None), ("phone", PHONE)]:
        page, recorder = open_page(viewport=viewport)
        page.goto(f"{live_server.url}/accounts/login/")
        page.screenshot(path=str(artifacts_dir / f"login-{name}.png"))
        sign_in(page, live_server, "gina")
        expect(page.locator(".session-row")).to_have_count(3)
        page.screenshot(path=str(artifacts_dir / f"session-list-{name}.png"), full_page=True)

        page.goto(f"{live_server.url}/sessions/{lisbon.uuid}/")
        expect(page.locator("#summary-status-line")).to_have_text(
            re.compile(r"not summarised yet|Up to date")
        )
        if name == "desktop":
            expect(page.locator("#memory-panel")).to_be_visible()
            expect(page.get_by_label("Message", exact=True)).to_be_focused()
        else:
            expect(page.locator("#memory-panel")).to_be_hidden()
        page.screenshot(path=str(artifacts_dir / f"chat-{name}.png"))

        if name == "desktop":
            page.goto(f"{live_server.url}/sessions/{untitled.uuid}/")
            expect(page.locator("#empty-chat")).to_be_visible()
            expect(page.locator("#chat-title")).to_have_text("Untitled session")
            page.screenshot(path=str(artifacts_dir / "chat-empty-desktop.png"))

        if name == "phone":
            page.get_by_role("button", name="Session memory").click()
            expect(page.locator("#memory-panel")).to_be_visible()
            expect(page.locator(".summary-card")).to_have_count(2)
            expect(page.locator(".curated-mark")).to_have_count(1)
            page.screenshot(path=str(artifacts_dir / "chat-memory-phone.png"))
            page.keyboard.press("Escape")
            expect(page.locator("#memory-panel")).to_be_hidden()
            expect(page.get_by_role("button", name="Session memory")).to_be_focused()

            page.get_by_role("button", name="Context").click()
            expect(page.locator("#context-result")).to_be_visible()
            page.screenshot(path=str(artifacts_dir / "context-inspector-phone.png"))
        assert recorder.page_errors == []
        assert recorder.console_errors == []

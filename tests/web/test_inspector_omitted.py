"""The context inspector says what was left out of the context and why, in
words a person reads without knowing how the context is built: earlier
exchanges that match the next message too weakly to be quoted (under
CONTEXT_RELEVANCE_FLOOR), and related ones that did not fit in the token
budget. Real contexts, built from a session of vectors and words, in a real
browser (Chromium through Playwright, against live_server), CSP in force."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from sessions_app.semantic import embed_pending
from sessions_app.services import episodes_bulk_create
from tests.factories import ChatSessionFactory, UserFactory
from tests.web.conftest import sign_in

pytestmark = pytest.mark.django_db(transaction=True)

TOPICS = [
    ("Can you suggest a quick dinner with lentils?", "A lentil curry takes thirty minutes with rice."),
    ("How long should I boil eggs for a soft yolk?", "About six minutes, then cold water."),
    ("Which plants grow well on a shady balcony?", "Ferns, ivy and begonias cope with shade."),
    ("What is a good stretch for a stiff back?", "Try the cat-cow stretch slowly, ten times."),
    ("How do I keep bread fresh for longer?", "Wrap it in cloth and keep it out of the fridge."),
]
TRIP_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
QUESTION = "What did we plan for the Porto trip?"


def trip_day(day: str) -> dict[str, str]:
    """A long exchange about the trip: every one of them answers the question."""
    plan = " ".join(
        f"On {day} in Porto, stop {n}: a walk along the Douro river, lunch by the Ribeira, "
        f"then the tiled churches and a port cellar in Gaia before the evening tram."
        for n in range(6)
    )
    return {"user_input": f"Let us plan {day} of the Porto trip in detail.", "response": plan}


@pytest.fixture
def weighed_session(settings):
    """Six long exchanges planning a trip to Porto, then 40 short ones on
    unrelated topics (the recent window holds only those), encoded as the
    worker would."""
    settings.CONTEXT_SEMANTIC_CANDIDATES = 5000  # retrieval by meaning, as in production
    settings.SUMMARY_THRESHOLD_TOKENS = 10**9  # history only; no summaries needed
    session = ChatSessionFactory(owner=UserFactory(username="rosa"), title="Odds and ends")
    items = [trip_day(day) for day in TRIP_DAYS]
    items += [{"user_input": q, "response": a} for _ in range(8) for q, a in TOPICS]
    episodes = episodes_bulk_create(session=session, items=items)
    embed_pending(session.pk)
    return session, episodes


def open_inspector(page, live_server, session, question: str) -> dict:
    """The inspector opened for ``question``, and the context the API gives for it."""
    page.goto(f"{live_server.url}/sessions/{session.uuid}/")
    page.get_by_role("button", name="Context").click()
    page.locator("#context-question").fill(question)
    page.get_by_role("button", name="Refresh").click()
    expect(page.locator("#context-result")).to_be_visible()
    response = page.request.get(
        f"{live_server.url}/api/sessions/{session.uuid}/context/", params={"question": question}
    )
    assert response.status == 200
    return response.json()


def test_exchanges_under_the_relevance_floor_are_named_and_counted(
    open_page, live_server, weighed_session, artifacts_dir
):
    session, episodes = weighed_session
    page, recorder = open_page()
    sign_in(page, live_server, session.owner.username)
    context = open_inspector(page, live_server, session, "Thanks!")

    # The real payload first: earlier exchanges were ranked, all under the floor, none quoted;
    # the oldest, which no summary covers, left out of the digest too: the message needs no memory.
    below = context["omitted"]["below_floor"]
    assert len(below) >= 2
    assert set(below) <= {ep.pk for ep in episodes}
    assert context["retrieved"] == [] and context["omitted"]["retrieved"] == []
    assert "Relevant earlier exchanges:" not in context["prompt"]
    assert context["needs_no_memory"] is True
    assert context["omitted"]["digest"] and context["digest"] == []

    floor = page.locator('#context-omitted li[data-reason="floor"]')
    expect(floor).to_have_count(1)
    expect(floor).to_have_text(
        f"Not relevant enough: {len(below)} earlier exchanges were weighed against the next message, "
        "but match it too weakly to be worth quoting."
    )
    expect(page.locator('#context-omitted li[data-reason="memory"]')).to_have_text(
        "Nothing earlier needed: the next message asks for no memory (a thanks, a greeting, a goodbye), "
        "so only the latest exchanges go with it."
    )
    # What the digest would have quoted was not left out for lack of room: no line says so.
    expect(page.locator('#context-omitted li[data-reason="budget"]')).to_have_count(0)
    expect(page.locator("#context-retrieved")).to_be_hidden()
    expect(page.locator("#context-parts")).to_contain_text("0 relevant earlier exchanges")
    page.screenshot(path=str(artifacts_dir / "context-inspector-below-floor-desktop.png"))

    # A question that is not small talk, and that nothing in the session answers:
    # ranked all the same, every exchange under the floor, for that reason alone.
    question = "What is the capital of Mongolia?"
    page.locator("#context-question").fill(question)
    page.get_by_role("button", name="Refresh").click()
    context = page.request.get(
        f"{live_server.url}/api/sessions/{session.uuid}/context/", params={"question": question}
    ).json()
    below = context["omitted"]["below_floor"]
    assert below and context["needs_no_memory"] is False
    assert context["retrieved"] == [] and context["omitted"]["retrieved"] == []
    expect(floor).to_have_text(
        f"Not relevant enough: {len(below)} earlier exchanges were weighed against the next message, "
        "but match it too weakly to be worth quoting."
    )
    expect(page.locator('#context-omitted li[data-reason="memory"]')).to_have_count(0)
    expect(page.locator('#context-omitted li[data-reason="budget"]')).to_have_count(0)
    assert recorder.page_errors == []
    assert recorder.console_errors == []


def test_related_exchanges_over_the_budget_get_their_own_reason(
    open_page, live_server, weighed_session, artifacts_dir, settings
):
    session, episodes = weighed_session
    # A budget the window and a few passages fill: the trip's other days clear the floor but do not fit.
    settings.CONTEXT_DEFAULT_BUDGET = 1000
    page, recorder = open_page()
    sign_in(page, live_server, session.owner.username)
    context = open_inspector(page, live_server, session, QUESTION)

    trip = {ep.pk for ep in episodes[: len(TRIP_DAYS)]}
    over = context["omitted"]["retrieved"]
    assert set(context["retrieved"]) & trip
    assert set(over) & trip  # days of the trip that clear the floor and did not fit
    assert context["token_count"] <= context["budget"] == 1000
    assert context["needs_no_memory"] is False

    budget = page.locator('#context-omitted li[data-reason="budget"]')
    expect(budget).to_have_count(1)
    expect(budget).to_contain_text(
        f"No room left in the token budget for {len(over)} relevant earlier exchanges"
    )
    # The oldest exchanges no summary covers yet, when their digest did not fit either.
    digest = context["omitted"]["digest"]
    if digest:
        expect(budget).to_contain_text(f" and {len(digest)} older exchanges not summarised yet.")
    expect(page.locator('#context-omitted li[data-reason="memory"]')).to_have_count(0)
    # Each reason has its own line: the floor's, when present, counts only its own exchanges.
    floor = page.locator('#context-omitted li[data-reason="floor"]')
    below = context["omitted"]["below_floor"]
    if below:
        expect(floor).to_contain_text(f"Not relevant enough: {len(below)} earlier exchange")
    else:
        expect(floor).to_have_count(0)
    expect(page.locator("#context-retrieved-count")).to_have_text(str(len(context["retrieved"])))
    page.screenshot(path=str(artifacts_dir / "context-inspector-over-budget-desktop.png"))
    assert recorder.page_errors == []
    assert recorder.console_errors == []

"""An offline chat of 30 exchanges in a real browser: the reply says no model
is configured and shows what memory found, as it streams and after a reload;
the summary card quotes the whole conversation."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from sessions_app.labels import episode_label
from sessions_app.models import Episode
from summaries.inference.offline import OFFLINE_CHAT_REPLY
from summaries.models import Summary
from tests.factories import ChatSessionFactory, EpisodeFactory, UserFactory
from tests.web.conftest import sign_in

pytestmark = pytest.mark.django_db(transaction=True)

TOLD = [
    "I started learning the cello with a teacher from the conservatory.",
    "Our neighbour Ingrid grows tomatoes on her balcony every summer.",
    "My cat Miso is afraid of the vacuum cleaner and hides under the bed.",
    "The bakery on Elm Street sells rye bread on Fridays only.",
    "My brother Tomas is training for the Berlin marathon in September.",
    "We painted the kitchen a pale green colour last weekend.",
    "The library closes early on Wednesdays during the school holidays.",
    "I booked a week in Porto for the end of October.",
    "The car needs new winter tyres before December.",
    "My daughter Lena plays goalkeeper in the school football team.",
    "The plumber comes on Thursday to fix the dripping shower.",
    "I finally finished reading the long Russian novel about the brothers.",
    "My mother turns seventy in June and wants a quiet dinner.",
    "We adopted a second cat, a grey kitten called Pepper.",
    "The office moved to the sixth floor of the glass building by the river.",
    "I am allergic to hazelnuts, so I check every cake label.",
    "Our holiday flat in Porto has a balcony facing the river Douro.",
    "Tomas wants to run the marathon in under four hours.",
    "Lena asked for a blue bicycle for her tenth birthday.",
    "The garden fence blew over in the storm on Sunday night.",
    "I switched my phone plan to one with more data for travel.",
    "My colleague Ruth recommended a podcast about medieval history.",
    "We are thinking about solar panels for the south side of the roof.",
    "The dentist moved my appointment to the second week of November.",
    "I bake sourdough every Saturday morning with the old starter.",
    "Pepper learned to open the kitchen cupboard with her paw.",
    "The choir rehearses on Tuesday evenings in the church hall.",
    "My sister Ana is moving from Lisbon to Copenhagen in spring.",
    "We planted three apple trees at the back of the garden.",
]
QUESTION = "Which cat is afraid of the vacuum cleaner?"


def test_an_offline_chat_shows_what_memory_found(open_page, live_server, artifacts_dir):
    owner = UserFactory(username="mira")
    session = ChatSessionFactory(owner=owner, title="Everyday notes")
    for text in TOLD:  # each write commits and is summarized as it would be live
        EpisodeFactory(session=session, user_input=text, response=OFFLINE_CHAT_REPLY)
    cat = Episode.objects.get(session=session, user_input=TOLD[2])
    label = episode_label(created_at=cat.created_at, position=cat.position)

    page, recorder = open_page()
    sign_in(page, live_server, "mira")
    page.goto(f"{live_server.url}/sessions/{session.uuid}/")
    box = page.get_by_label("Message", exact=True)
    box.fill(QUESTION)
    box.press("Enter")
    expect(page.locator("#messages .episode:not(.is-pending)")).to_have_count(30, timeout=30_000)

    turn = page.locator("#messages .episode").last
    expect(turn.locator(".msg-assistant .msg-body")).to_have_text(OFFLINE_CHAT_REPLY)
    memory = turn.locator(".offline-memory")
    expect(memory).to_be_in_viewport()  # the page follows the reply down to it
    expect(memory.locator(".offline-memory-item").first).to_contain_text(label)
    expect(memory.locator(".offline-memory-item").first).to_contain_text("My cat Miso is afraid of the vacuum")
    expect(memory).to_contain_text("From the summaries")
    expect(memory).to_contain_text("And the last 8 exchanges in full.")
    expect(page.locator("#send-button")).to_be_enabled()
    page.screenshot(path=str(artifacts_dir / "offline-memory-desktop.png"))

    # The summary card quotes the conversation from its first exchanges to its last.
    rows = list(Summary.objects.chain(session.pk))
    summary = "\n".join(row.content for row in rows)
    last = Episode.objects.get(pk=rows[-1].last_episode_id)
    assert rows[-1].last_episode_id > cat.pk + 20
    assert TOLD[0] in summary and last.user_input in summary and "[offline]" not in summary
    expect(page.locator("#summary-cards .summary-text").first).to_contain_text("cello")

    # After a reload the page renders the same from the stored episode.
    page.reload()
    memory = page.locator("#messages .episode").last.locator(".offline-memory")
    expect(memory.locator(".offline-memory-item").first).to_contain_text(label)
    expect(memory).to_contain_text("My cat Miso is afraid of the vacuum")
    assert page.locator(".offline-memory").count() == 1
    assert recorder.page_errors == [] and recorder.console_errors == []


def test_a_streamed_memory_says_the_newest_exchange_went_in_part(open_page, live_server, settings):
    """What the page builds for a streamed reply says what the stored memory
    says after a reload: here, that the newest exchange went in by its
    newest part (alone it is longer than the recent window's share)."""
    settings.SUMMARY_THRESHOLD_TOKENS = 10**9  # the window and retrieval alone
    owner = UserFactory(username="tove")
    session = ChatSessionFactory(owner=owner, title="Planner")
    for text in TOLD[:10]:
        EpisodeFactory(session=session, user_input=text, response=OFFLINE_CHAT_REPLY)
    pasted = " ".join(f"Line {n} of the build log: compiling module {n} of the planner." for n in range(120))
    EpisodeFactory(session=session, user_input=pasted, response=OFFLINE_CHAT_REPLY)

    page, recorder = open_page()
    sign_in(page, live_server, "tove")
    page.goto(f"{live_server.url}/sessions/{session.uuid}/")
    box = page.get_by_label("Message", exact=True)
    box.fill(QUESTION)
    box.press("Enter")
    expect(page.locator("#messages .episode:not(.is-pending)")).to_have_count(12, timeout=30_000)
    note = page.locator("#messages .episode").last.locator(".offline-memory-recent")
    stored = Episode.objects.filter(session=session).latest("pk").metadata["offline_memory"]
    assert stored["newest_in_part"] is True and stored["recent"] == 1
    expect(note).to_have_text("And the last exchange, in part.")

    page.reload()
    expect(page.locator("#messages .episode").last.locator(".offline-memory-recent")).to_have_text(
        "And the last exchange, in part."
    )
    assert recorder.page_errors == [] and recorder.console_errors == []

"""The Memory page in a real browser: a note made in a chat shows there as
"Memory updated: …" with its link; on the Memory page it is seen, edited and
deleted, and the next context follows each change."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from notes.models import Note
from summaries.context import build_context
from tests.factories import ChatSessionFactory, UserFactory
from tests.web.conftest import sign_in

pytestmark = pytest.mark.django_db(transaction=True)

INSTRUCTION = "From now on, always answer in metric units."


def next_notes(session) -> str:
    """The notes section of the next context ("" when it has none)."""
    session.refresh_from_db()
    prompt = build_context(session=session, question="How far is it to the lake?").prompt
    sections = prompt.split("\n\n")
    return sections[1] if sections[1].startswith("What the user has asked you to keep in mind:") else ""


def test_a_note_is_seen_edited_and_deleted_and_the_next_context_follows(open_page, live_server):
    owner = UserFactory(username="ines")
    session = ChatSessionFactory(owner=owner, title="Hiking", memory_scope="shared")
    page, recorder = open_page()
    sign_in(page, live_server, "ines")

    # The session list links to the Memory page; the chat's memory panel too.
    expect(page.get_by_role("link", name="Memory")).to_have_attribute("href", "/memory/")
    page.goto(f"{live_server.url}/sessions/{session.uuid}/")
    box = page.get_by_label("Message", exact=True)
    box.fill(f"{INSTRUCTION} How long is the trail?")
    box.press("Enter")
    updated = page.locator("#messages .episode").last.locator(".memory-updated")
    expect(updated).to_have_text(f"Memory updated: {INSTRUCTION}", timeout=20_000)
    note = Note.objects.get()
    assert note.kind == "instruction" and next_notes(session).endswith(f"\n- {INSTRUCTION}")

    # The link leads to the note on the Memory page.
    updated.get_by_role("link").click()
    page.wait_for_url(f"{live_server.url}/memory/#note-{note.pk}")
    row = page.locator(f"#note-{note.pk}")
    expect(row).to_contain_text(INSTRUCTION)
    expect(row).to_contain_text("Instruction")

    # Edit: the note becomes the person's own, and the next context carries the new text.
    row.get_by_text("Edit").click()
    row.get_by_label("Text").fill("Answer in metric units, and give miles in brackets.")
    row.get_by_role("button", name="Save").click()
    expect(page.locator(f"#note-{note.pk}")).to_contain_text(
        "Answer in metric units, and give miles in brackets."
    )
    expect(page.locator(f"#note-{note.pk}")).to_contain_text("Edited by you")
    note.refresh_from_db()
    assert note.curated and note.revisions.get().text == INSTRUCTION
    notes = next_notes(session)
    assert "give miles in brackets" in notes and INSTRUCTION not in notes

    # An edited note is the person's, no longer the exchange's: the chat no longer says it came from there.
    page.goto(f"{live_server.url}/sessions/{session.uuid}/")
    expect(page.locator("#messages .episode")).to_have_count(1)
    expect(page.locator(".memory-updated")).to_have_count(0)
    if not page.locator("#memory-panel").is_visible():
        page.locator("#memory-toggle").click()
    page.get_by_role("link", name="Memory: what Nexus keeps about you").click()
    page.wait_for_url(f"{live_server.url}/memory/")

    # Delete: gone from the page and from the next context.
    page.locator(f"#note-{note.pk}").get_by_role("button", name="Delete").click()
    expect(page.locator(f"#note-{note.pk}")).to_have_count(0)
    expect(page.get_by_text("Nothing kept yet")).to_be_visible()
    assert not Note.objects.exists()
    assert next_notes(session) == ""
    assert recorder.page_errors == [] and recorder.console_errors == []

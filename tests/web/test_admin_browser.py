"""A summary row's admin page in a real browser: staff sign in, see the
covered episodes, the model call and the revision history, take a
screenshot, and restore a revision with its button (a real CSRF-protected
form post)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from summaries.curation import record_revision, summary_curate
from summaries.models import Summary, SummaryRevision
from tests.factories import ChatSessionFactory, EpisodeFactory, SummaryFactory, UserFactory
from tests.web.conftest import PASSWORD

pytestmark = pytest.mark.django_db(transaction=True)

EXCHANGES = [
    ("We are planning a week in Lisbon in May. Where should we stay?",
     "Alfama or Baixa keep you close to the sights; Príncipe Real is quieter."),
    ("Is the 28 tram worth it?", "Yes, early in the morning before the queues; otherwise walk the route."),
    ("Which day trip would you pick?", "Sintra, by train from Rossio: Pena Palace and the Moorish castle."),
    ("Any pastry we must not miss?", "Pastéis de Belém, warm, with cinnamon, at the original shop."),
]


def make_row() -> Summary:
    session = ChatSessionFactory(title="Lisbon trip", owner=UserFactory(username="traveller"))
    episodes = [EpisodeFactory(session=session, user_input=q, response=a) for q, a in EXCHANGES]
    summary = SummaryFactory(
        session=session,
        content="The user is planning a week in Lisbon in May and asked where to stay.",
        first_episode_id=episodes[0].pk,
        last_episode_id=episodes[1].pk,
        model="qwen2.5:1.5b",
        prompt_tokens=612,
        completion_tokens=88,
        duration_ms=1840,
    )
    # An automatic cumulative update: the previous state kept, the range moved on.
    record_revision(summary=summary, source=SummaryRevision.Source.AUTOMATIC)
    Summary.objects.filter(pk=summary.pk).update(
        content="The user plans a week in Lisbon in May: where to stay, the 28 tram, a day trip to Sintra.",
        last_episode_id=episodes[3].pk,
    )
    summary.refresh_from_db()
    editor = UserFactory(username="curator", is_staff=True)
    summary_curate(
        summary=summary,
        content=(
            "The user plans a week in Lisbon in May with a partner. They settled on Alfama, will ride the "
            "28 tram early, take the train to Sintra for Pena Palace, and want pastéis de Belém."
        ),
        actor=editor,
    )
    return summary


def test_summary_change_page_screenshot_and_restore(open_page, live_server, artifacts_dir):
    summary = make_row()
    staff = UserFactory(username="staff", is_staff=True, is_superuser=True)
    page, recorder = open_page()

    page.goto(f"{live_server.url}{reverse('admin:login')}")
    page.get_by_label("Username").fill(staff.username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}{reverse('admin:index')}")

    page.goto(f"{live_server.url}{reverse('admin:summaries_summary_change', args=[summary.pk])}")
    assert page.locator("textarea[name=content]").input_value().startswith("The user plans a week in Lisbon")
    covered = page.locator("table.covered-episodes tbody tr")
    assert covered.count() == len(EXCHANGES)
    assert "Sintra, by train from Rossio" in covered.nth(2).inner_text()
    model_call = page.locator("fieldset", has_text="Model call").inner_text()
    for figure in ("qwen2.5:1.5b", "612", "88", "1840"):
        assert figure in model_call
    history = page.locator("#revision-history tr.revision")
    assert history.count() == 2
    assert "Staff edit" in history.nth(0).inner_text() and "curator" in history.nth(0).inner_text()
    assert "Automatic update" in history.nth(1).inner_text()
    page.screenshot(path=str(artifacts_dir / "admin-summary-change.png"), full_page=True)

    # Restore the text from before the automatic update, through its button.
    oldest = summary.revisions.get(source=SummaryRevision.Source.AUTOMATIC)
    history.nth(1).get_by_role("button", name="Restore").click()
    page.wait_for_selector(".messagelist .success")
    assert "Restored the text" in page.locator(".messagelist").inner_text()
    summary.refresh_from_db()
    assert summary.content == oldest.content
    assert summary.last_episode_id == oldest.last_episode_id
    assert page.locator("#revision-history tr.revision").count() == 3
    assert recorder.page_errors == []

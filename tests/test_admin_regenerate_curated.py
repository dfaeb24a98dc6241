"""Nothing discards a curation silently in the admin: "Regenerate selected
rows" with curated rows among them answers a confirmation page listing those
rows; Cancel leaves everything as it was (the un-curated rows of the
selection too), Confirm regenerates the selection and keeps each curated
text as a revision, the row saying it replaced a curation. "Rebuild the
session's chain" keeps curated rows as they are, so it asks nothing."""

from __future__ import annotations

import pytest
from django.urls import reverse

from summaries.curation import summary_curate
from summaries.models import Summary, SummaryRevision
from tests.test_admin_actions import (
    SUMMARIES_URL,
    chained_session,
    confirm,
    curated_listed,
    messages_of,
    regenerated,
    run_action,
    staff_browser,  # noqa: F401 - fixture
)

pytestmark = pytest.mark.django_db

STAFF_TEXT = "The cat is called Pepper, as the user said in episode 3."


@pytest.fixture
def chain(staff_user) -> list[Summary]:
    """Three rows of one session, the middle one curated by staff."""
    _, rows = chained_session(rows=3)
    summary_curate(summary=rows[1], content=STAFF_TEXT, actor=staff_user)
    return [Summary.objects.get(pk=row.pk) for row in rows]


def ask(client, chain, capture):
    return run_action(client, SUMMARIES_URL, "regenerate_selected", [row.pk for row in chain], capture)


def assert_as_before(chain: list[Summary]) -> None:
    for row in chain:
        now = Summary.objects.get(pk=row.pk)
        assert (now.content, now.curated, now.replaced_curation) == (row.content, row.curated, False)
        assert regenerated(now) == 0


def test_curated_rows_are_listed_and_nothing_is_queued(
    staff_browser, chain, django_capture_on_commit_callbacks  # noqa: F811
):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        page = staff_browser.post(
            SUMMARIES_URL, {"action": "regenerate_selected", "_selected_action": [str(r.pk) for r in chain]}
        )
    assert page.status_code == 200
    assert callbacks == []
    assert curated_listed(page) == [chain[1].pk]
    html = page.content.decode()
    assert "Replace a curated summary?" in html
    assert STAFF_TEXT in html and "<td>staff</td>" in html  # the text and who curated it
    assert reverse("admin:summaries_summary_change", args=[chain[1].pk]) in html
    # Only the curated row is listed; the others are counted.
    assert chain[0].content not in html
    assert "The other 2 selected rows are not curated" in html
    assert_as_before(chain)


def test_cancel_leaves_every_row_as_it_was(
    staff_browser, chain, django_capture_on_commit_callbacks  # noqa: F811
):
    page = ask(staff_browser, chain, django_capture_on_commit_callbacks)
    cancel = page.context["cancel_url"]
    assert f'href="{cancel}" class="button cancel-link"' in page.content.decode()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        back = staff_browser.get(cancel)
    assert back.status_code == 200 and callbacks == []
    assert_as_before(chain)


def test_confirm_regenerates_and_keeps_the_curated_text_as_a_revision(
    staff_browser, staff_user, chain, django_capture_on_commit_callbacks  # noqa: F811
):
    page = ask(staff_browser, chain, django_capture_on_commit_callbacks)
    response = confirm(staff_browser, page, django_capture_on_commit_callbacks)

    assert "Queued 3 summary rows for regeneration." in messages_of(response)
    assert "1 curated text is replaced; it is kept as a revision of its row." in messages_of(response)
    assert [regenerated(row) for row in chain] == [1, 1, 1]
    row = Summary.objects.get(pk=chain[1].pk)
    assert row.content != STAFF_TEXT
    assert (row.curated, row.curated_by, row.replaced_curation) == (False, None, True)
    revision = row.revisions.get(source=SummaryRevision.Source.REGENERATE)
    assert (revision.content, revision.curated, revision.actor) == (STAFF_TEXT, True, staff_user)
    # The others replaced no curation.
    assert not Summary.objects.get(pk=chain[0].pk).replaced_curation
    # The row's page says so, and its revision history holds the curated text with Restore.
    html = staff_browser.get(reverse("admin:summaries_summary_change", args=[row.pk])).content.decode()
    assert '<div class="readonly"><img src="/static/admin/img/icon-yes.svg" alt="True"></div>' in html
    assert STAFF_TEXT in html and "(curated)" in html


def test_a_row_curated_after_the_page_was_shown_is_asked_about_again(
    staff_browser, staff_user, chain, django_capture_on_commit_callbacks  # noqa: F811
):
    page = ask(staff_browser, chain, django_capture_on_commit_callbacks)
    summary_curate(summary=chain[0], content="Another staff text.", actor=staff_user)

    again = confirm(staff_browser, page, django_capture_on_commit_callbacks)

    assert curated_listed(again) == [chain[0].pk, chain[1].pk]
    assert Summary.objects.get(pk=chain[0].pk).content == "Another staff text."
    assert [regenerated(row) for row in chain] == [0, 0, 0]


def test_a_selection_without_curated_rows_is_queued_at_once(
    staff_browser, django_capture_on_commit_callbacks  # noqa: F811
):
    _, rows = chained_session(rows=2)
    response = ask(staff_browser, rows, django_capture_on_commit_callbacks)
    assert curated_listed(response) == []
    assert "Queued 2 summary rows for regeneration." in messages_of(response)
    assert [regenerated(row) for row in rows] == [1, 1]


def test_rebuild_keeps_curated_rows_and_asks_nothing(
    staff_browser, chain, django_capture_on_commit_callbacks  # noqa: F811
):
    response = run_action(
        staff_browser, SUMMARIES_URL, "rebuild_session_chains", [chain[0].pk],
        django_capture_on_commit_callbacks,
    )
    assert curated_listed(response) == []
    assert "Queued a rebuild of 1 session's summary chain." in messages_of(response)
    kept = Summary.objects.get(pk=chain[1].pk)
    assert (kept.content, kept.curated, kept.replaced_curation) == (STAFF_TEXT, True, False)
    assert not kept.revisions.filter(source=SummaryRevision.Source.REBUILD).exists()
    rebuilt = Summary.objects.get(pk=chain[0].pk)
    assert rebuilt.revisions.filter(source=SummaryRevision.Source.REBUILD).exists()

"""Staff admin for summary rows: edits become curated and keep a revision,
revisions can be restored, the row's page shows what it covers, and the
usual model permissions hold."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from sessions_app.models import Episode
from sessions_app.tokens import count_tokens
from summaries.admin.summaries import COVERED_EPISODES_SHOWN
from summaries.curation import summary_curate, summary_restore
from summaries.models import Summary, SummaryRevision
from tests.factories import ChatSessionFactory, EpisodeFactory, SummaryFactory, UserFactory

pytestmark = pytest.mark.django_db

SUMMARIES_URL = reverse("admin:summaries_summary_changelist")
REVISIONS_URL = reverse("admin:summaries_summaryrevision_changelist")
STATES_URL = reverse("admin:summaries_summarizationstate_changelist")
Source = SummaryRevision.Source


@pytest.fixture
def staff_browser(staff_user) -> Client:
    client = Client()
    client.force_login(staff_user)
    return client


@pytest.fixture
def viewer_browser() -> Client:
    """Staff who may look at summaries but not change them."""
    viewer = UserFactory(username="viewer", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_summary"))
    client = Client()
    client.force_login(viewer)
    return client


def change_url(summary: Summary) -> str:
    return reverse("admin:summaries_summary_change", args=[summary.pk])


def restore_url(summary: Summary, revision: SummaryRevision) -> str:
    return reverse("admin:summaries_summary_restore", args=[summary.pk, revision.pk])


def summary_over(episodes: list[Episode], **kwargs) -> Summary:
    """A model-written row covering ``episodes`` (one session's, oldest first)."""
    return SummaryFactory(
        session=episodes[0].session,
        first_episode_id=episodes[0].pk,
        last_episode_id=episodes[-1].pk,
        model="qwen2.5:1.5b",
        prompt_tokens=812,
        completion_tokens=143,
        duration_ms=2417,
        **kwargs,
    )


def covered_summary(episodes: int = 3, **kwargs) -> Summary:
    """A row over ``episodes`` new episodes of a new session."""
    return summary_over(EpisodeFactory.create_batch(episodes, session=ChatSessionFactory()), **kwargs)


def query_count(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    return len(ctx.captured_queries)


# --- lists ---------------------------------------------------------------------


def test_summary_list_query_count_does_not_grow(staff_browser):
    for _ in range(2):
        covered_summary()
    small = query_count(staff_browser, SUMMARIES_URL)
    for _ in range(10):
        covered_summary()
    assert query_count(staff_browser, SUMMARIES_URL) == small


def test_summary_list_columns(staff_browser):
    summary = covered_summary(content="Short row.")
    html = staff_browser.get(SUMMARIES_URL).content.decode()
    # Named by positions in the session, never by internal ids.
    assert "Exchanges 1–3" in html and f"Episodes {summary.episode_range}" not in html
    assert str(summary.session) in html
    assert "qwen2.5:1.5b" in html
    assert f'<td class="field-token_count">{summary.token_count}</td>' in html


def test_revision_list_query_count_does_not_grow(staff_browser, staff_user):
    summary = covered_summary()
    summary_curate(summary=summary, content="first edit", actor=staff_user)
    small = query_count(staff_browser, REVISIONS_URL)
    for n in range(8):
        summary_curate(summary=covered_summary(), content=f"edit {n}", actor=staff_user)
    assert query_count(staff_browser, REVISIONS_URL) == small


def test_revisions_and_states_are_read_only(staff_browser, staff_user):
    summary = covered_summary()
    summary_curate(summary=summary, content="edited", actor=staff_user)
    revision = summary.revisions.get()
    url = reverse("admin:summaries_summaryrevision_change", args=[revision.pk])
    assert staff_browser.get(url).status_code == 200
    assert staff_browser.post(url, {"content": "forged"}).status_code == 403
    assert staff_browser.get(reverse("admin:summaries_summaryrevision_add")).status_code == 403
    assert SummaryRevision.objects.get(pk=revision.pk).content == revision.content
    assert staff_browser.get(STATES_URL).status_code == 200
    assert staff_browser.get(reverse("admin:summaries_summarizationstate_add")).status_code == 403


def test_summary_rows_cannot_be_added_or_deleted_here(staff_browser):
    summary = covered_summary()
    assert staff_browser.get(reverse("admin:summaries_summary_add")).status_code == 403
    delete_url = reverse("admin:summaries_summary_delete", args=[summary.pk])
    assert staff_browser.post(delete_url, {"post": "yes"}).status_code == 403
    assert Summary.objects.filter(pk=summary.pk).exists()


# --- the row's page ----------------------------------------------------------------


def test_change_page_shows_the_call_and_the_covered_episodes(staff_browser):
    session = ChatSessionFactory()
    before = EpisodeFactory(session=session, user_input="Not in this row")
    covered = [
        EpisodeFactory(session=session, user_input=f"Covered question {n}?", response=f"Covered answer {n}.")
        for n in range(3)
    ]
    after = EpisodeFactory(session=session, user_input="Also not in this row")
    summary = summary_over(covered)  # qwen2.5:1.5b, 812 + 143 tokens, 2417 ms
    html = staff_browser.get(change_url(summary)).content.decode()
    for n in range(3):
        assert f"Covered question {n}?" in html and f"Covered answer {n}." in html
    assert before.user_input not in html and after.user_input not in html
    for figure in ("qwen2.5:1.5b", "812", "143", "2417"):
        assert figure in html
    assert "3 episodes." in html
    assert f"id__gte={covered[0].pk}" in html and f"id__lte={covered[-1].pk}" in html


def test_change_page_caps_the_covered_episodes(staff_browser):
    summary = covered_summary(episodes=COVERED_EPISODES_SHOWN + 5)
    with CaptureQueriesContext(connection) as ctx:
        html = staff_browser.get(change_url(summary)).content.decode()
    assert f"Showing the first {COVERED_EPISODES_SHOWN} of {COVERED_EPISODES_SHOWN + 5} episodes." in html
    assert html.count('<tr><td><a href="/admin/sessions_app/episode/') == COVERED_EPISODES_SHOWN
    # The episode texts are cut in SQL: no query selects a whole text column.
    episode_queries = [q["sql"] for q in ctx.captured_queries if "sessions_app_episode" in q["sql"]]
    assert len(episode_queries) == 2  # the capped rows and their count
    for sql in episode_queries:
        select_list = sql.split(" FROM ")[0]
        for column in ('"sessions_app_episode"."user_input"', '"sessions_app_episode"."response"'):
            # Only ever as the argument of LEFT()/SUBSTR(), never selected whole.
            assert select_list.count(column) == select_list.count("(" + column)


# --- editing ----------------------------------------------------------------------------


def test_edit_marks_curated_recomputes_tokens_and_keeps_a_revision(staff_browser, staff_user):
    summary = covered_summary(content="The machine wrote this.")
    before = Summary.objects.get(pk=summary.pk)
    new_text = "The user planned a trip to Lisbon.\nThey asked about trams and pastries."
    response = staff_browser.post(change_url(summary), {"content": new_text.replace("\n", "\r\n")})
    assert response.status_code == 302
    summary.refresh_from_db()
    assert summary.content == new_text
    assert summary.token_count == count_tokens(new_text) != before.token_count
    assert summary.curated and summary.curated_by == staff_user
    revision = summary.revisions.get()
    assert revision.source == Source.STAFF_EDIT
    assert revision.actor == staff_user
    assert revision.content == "The machine wrote this."
    assert (revision.first_episode_id, revision.last_episode_id) == (
        before.first_episode_id,
        before.last_episode_id,
    )
    assert revision.token_count == before.token_count and not revision.curated
    assert revision.created_at is not None


def test_saving_an_untouched_text_is_no_edit(staff_browser):
    summary = covered_summary(content="Line one.\nLine two.")
    # A browser sends the textarea back with CRLF line ends.
    response = staff_browser.post(change_url(summary), {"content": "Line one.\r\nLine two."})
    assert response.status_code == 302
    summary.refresh_from_db()
    assert not summary.curated
    assert not summary.revisions.exists()


def test_an_edit_written_against_an_older_version_is_held_back(staff_browser, staff_user):
    summary = covered_summary(content="What the page showed.")
    form = staff_browser.get(change_url(summary)).context["adminform"].form
    loaded_version = form["loaded_version"].value()
    # An automatic pass lands while the page is open.
    Summary.objects.filter(pk=summary.pk).update(content="A newer automatic text.", updated_at=timezone.now())
    posted = {"content": "My edit.", "loaded_version": loaded_version}
    response = staff_browser.post(change_url(summary), posted)
    assert response.status_code == 200
    assert "A newer automatic text." in response.content.decode()
    summary.refresh_from_db()
    assert summary.content == "A newer automatic text." and not summary.revisions.exists()
    # Saving again, having seen the current text, is an ordinary edit.
    form = response.context["adminform"].form
    posted["loaded_version"] = form["loaded_version"].value()
    assert staff_browser.post(change_url(summary), posted).status_code == 302
    summary.refresh_from_db()
    assert summary.content == "My edit." and summary.curated
    assert summary.revisions.get().content == "A newer automatic text."


def test_empty_content_is_refused(staff_browser):
    summary = covered_summary(content="Keep me.")
    response = staff_browser.post(change_url(summary), {"content": "   "})
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["content"]
    summary.refresh_from_db()
    assert summary.content == "Keep me." and not summary.revisions.exists()


def test_change_page_lists_revisions_with_restore_buttons(staff_browser, staff_user):
    summary = covered_summary(content="Version one.")
    summary_curate(summary=summary, content="Version two.", actor=staff_user)
    summary_curate(summary=summary, content="Version three.", actor=staff_user)
    html = staff_browser.get(change_url(summary)).content.decode()
    for revision in summary.revisions.all():
        assert restore_url(summary, revision) in html
    assert "Version one." in html and "Version two." in html
    assert html.count("Staff edit") >= 2
    assert "staff" in html  # who made the change


# --- restoring ------------------------------------------------------------------------------


def test_restore_puts_the_text_back_and_is_itself_a_revision(staff_browser, staff_user):
    summary = covered_summary(content="Original machine text.")
    summary_curate(summary=summary, content="A staff edit.", actor=staff_user)
    revision = summary.revisions.get()
    response = staff_browser.post(restore_url(summary, revision), follow=True)
    assert response.redirect_chain[-1][0] == change_url(summary)
    assert any("Restored" in str(m) for m in response.context["messages"])
    summary.refresh_from_db()
    assert summary.content == "Original machine text."
    assert summary.token_count == count_tokens("Original machine text.")
    newest = summary.revisions.order_by("-pk").first()
    assert newest.source == Source.RESTORE
    assert newest.content == "A staff edit."
    assert newest.actor == staff_user
    assert summary.revisions.count() == 2


def test_restore_records_who_restored_as_an_edit_does(staff_user):
    restorer = UserFactory(username="restorer", is_staff=True, is_superuser=True)
    browser = Client()
    browser.force_login(restorer)
    summary = covered_summary(content="Original machine text.")
    summary_curate(summary=summary, content="A staff edit.", actor=staff_user)
    summary.refresh_from_db()
    assert summary.curated_by == staff_user
    browser.post(restore_url(summary, summary.revisions.get()))
    summary.refresh_from_db()
    assert summary.curated and summary.curated_by == restorer


def test_restore_without_a_person_records_nobody(staff_user):
    summary = covered_summary(content="Original machine text.")
    summary_curate(summary=summary, content="A staff edit.", actor=staff_user)
    restored = summary_restore(revision=summary.revisions.get(), actor=None)
    assert restored.curated and restored.curated_by is None


def test_restore_puts_the_range_back(staff_browser, staff_user):
    summary = covered_summary(episodes=4)
    Summary.objects.filter(pk=summary.pk).update(last_episode_id=summary.last_episode_id + 10)
    summary.refresh_from_db()
    summary_curate(summary=summary, content="edited", actor=staff_user)
    revision = summary.revisions.get()
    Summary.objects.filter(pk=summary.pk).update(last_episode_id=summary.last_episode_id + 5)
    staff_browser.post(restore_url(summary, revision))
    summary.refresh_from_db()
    assert summary.last_episode_id == revision.last_episode_id


def test_restore_that_opens_a_gap_in_the_chain_warns(staff_browser, staff_user):
    session = ChatSessionFactory()
    episodes = EpisodeFactory.create_batch(6, session=session)
    row = SummaryFactory(session=session, first_episode_id=episodes[0].pk, last_episode_id=episodes[1].pk)
    summary_curate(summary=row, content="edited", actor=staff_user)
    # The row grew after that edit and a later row followed it.
    Summary.objects.filter(pk=row.pk).update(last_episode_id=episodes[3].pk, last_position=4)
    SummaryFactory(session=session, first_episode_id=episodes[4].pk, last_episode_id=episodes[5].pk)
    response = staff_browser.post(restore_url(row, row.revisions.get()), follow=True)
    warnings = [str(m) for m in response.context["messages"] if m.level_tag == "warning"]
    expected = (
        "Exchanges after #2 up to #4 are no longer covered by this row and a "
        "later row follows it; rebuild the session's chain to cover them again."
    )
    assert warnings == [expected]


def test_restore_needs_post_and_csrf(staff_user):
    summary = covered_summary(content="Original.")
    summary_curate(summary=summary, content="Edited.", actor=staff_user)
    revision = summary.revisions.get()
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff_user)
    assert client.get(restore_url(summary, revision)).status_code == 405
    assert client.post(restore_url(summary, revision)).status_code == 403
    summary.refresh_from_db()
    assert summary.content == "Edited."


def test_restore_refuses_a_revision_of_another_row(staff_browser, staff_user):
    summary = covered_summary()
    other = covered_summary(content="Other row.")
    summary_curate(summary=other, content="Other row, edited.", actor=staff_user)
    response = staff_browser.post(restore_url(summary, other.revisions.get()))
    assert response.status_code == 404
    other.refresh_from_db()
    assert other.content == "Other row, edited."


# --- permissions --------------------------------------------------------------------------


def test_staff_without_change_permission_cannot_edit_or_restore(viewer_browser, staff_user):
    summary = covered_summary(content="Original.")
    summary_curate(summary=summary, content="Edited.", actor=staff_user)
    revision = summary.revisions.get()
    page = viewer_browser.get(change_url(summary))
    assert page.status_code == 200
    html = page.content.decode()
    assert "Edited." in html and "Original." in html  # history is visible
    assert restore_url(summary, revision) not in html
    assert '<textarea name="content"' not in html
    assert viewer_browser.post(change_url(summary), {"content": "Viewer text."}).status_code == 403
    assert viewer_browser.post(restore_url(summary, revision)).status_code == 403
    summary.refresh_from_db()
    assert summary.content == "Edited." and summary.revisions.count() == 1


def test_staff_without_change_permission_get_no_actions(viewer_browser):
    covered_summary()
    assert viewer_browser.get(SUMMARIES_URL).context["action_form"] is None


def test_staff_without_any_summary_permission_are_refused(client, staff_user):
    summary = covered_summary()
    summary_curate(summary=summary, content="Edited.", actor=staff_user)
    client.force_login(UserFactory(username="helper", is_staff=True))
    assert client.get(SUMMARIES_URL).status_code == 403
    assert client.get(change_url(summary)).status_code == 403
    assert client.post(restore_url(summary, summary.revisions.get())).status_code == 403

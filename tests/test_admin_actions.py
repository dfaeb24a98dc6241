"""Admin actions queue the same work as the API: "Regenerate selected rows"
re-summarizes exactly the chosen rows, "Rebuild the session's chain" rebuilds
each chosen session once. Tasks run eagerly here, after the commit, so each
test checks what the queued work did."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from sessions_app.models import ChatSession
from summaries.curation import summary_curate
from summaries.models import Summary, SummaryRevision
from tests.factories import ChatSessionFactory, EpisodeFactory, SummaryFactory, UserFactory

pytestmark = pytest.mark.django_db

SUMMARIES_URL = reverse("admin:summaries_summary_changelist")
SESSIONS_URL = reverse("admin:sessions_app_chatsession_changelist")
REGENERATE = SummaryRevision.Source.REGENERATE
REBUILD = SummaryRevision.Source.REBUILD


@pytest.fixture
def staff_browser(staff_user) -> Client:
    client = Client()
    client.force_login(staff_user)
    return client


def chained_session(rows: int = 3, per_row: int = 2) -> tuple[ChatSession, list[Summary]]:
    """A session whose episodes are all covered by ``rows`` summary rows."""
    session = ChatSessionFactory()
    chain = []
    for n in range(rows):
        episodes = EpisodeFactory.create_batch(per_row, session=session)
        chain.append(
            SummaryFactory(
                session=session,
                content=f"Hand-written row {n}.",
                first_episode_id=episodes[0].pk,
                last_episode_id=episodes[-1].pk,
            )
        )
    return session, chain


def run_action(client: Client, url: str, action: str, pks, capture) -> object:
    with capture(execute=True):
        response = client.post(
            url, {"action": action, "_selected_action": [str(pk) for pk in pks]}, follow=True
        )
    assert response.status_code == 200
    return response


def curated_listed(page) -> list[int]:
    """The curated rows a confirmation page lists (none: not a confirmation page)."""
    return [row.pk for row in (page.context or {}).get("curated", [])]


class _FormFields(HTMLParser):
    """The named inputs of a page's forms, as a browser would submit them
    (submit buttons included: the page has one)."""

    def __init__(self) -> None:
        super().__init__()
        self.fields: dict[str, list[str]] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        if tag == "input" and named.get("name"):
            self.fields.setdefault(named["name"], []).append(named.get("value") or "")


def confirm(client: Client, page, capture) -> object:
    """Post the confirmation page's form as its Confirm button does."""
    parser = _FormFields()
    parser.feed(page.content.decode())
    with capture(execute=True):
        response = client.post(SUMMARIES_URL, parser.fields, follow=True)
    assert response.status_code == 200
    return response


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def regenerated(summary: Summary) -> int:
    return summary.revisions.filter(source=REGENERATE).count()


def rebuilt(summary: Summary) -> int:
    return summary.revisions.filter(source=REBUILD).count()


def assert_rebuilt_once(before: list[Summary]) -> None:
    """The session's chain was folded again exactly once: every row kept
    from the old chain has one ``rebuild`` revision, and the rows still
    cover the same episodes."""
    after = list(Summary.objects.chain(before[0].session_id))
    assert after
    assert all(rebuilt(row) == 1 for row in after)
    assert after[0].first_episode_id == before[0].first_episode_id
    assert after[-1].last_episode_id == before[-1].last_episode_id


def assert_untouched(chain: list[Summary]) -> None:
    for row in chain:
        assert regenerated(row) == 0 and rebuilt(row) == 0
        assert Summary.objects.get(pk=row.pk).content == row.content


def test_regenerate_queues_exactly_the_selected_rows(
    staff_browser, staff_user, django_capture_on_commit_callbacks
):
    session, chain = chained_session(rows=3)
    _, elsewhere = chained_session(rows=1)
    summary_curate(summary=chain[2], content="A staff member wrote this.", actor=staff_user)
    ranges = [(s.first_episode_id, s.last_episode_id) for s in chain]

    # chain[2] is curated: the action asks first, then Confirm queues both.
    page = run_action(
        staff_browser, SUMMARIES_URL, "regenerate_selected", [chain[0].pk, chain[2].pk],
        django_capture_on_commit_callbacks,
    )
    assert curated_listed(page) == [chain[2].pk]
    response = confirm(staff_browser, page, django_capture_on_commit_callbacks)

    assert "Queued 2 summary rows for regeneration." in messages_of(response)
    for row in chain + elsewhere:
        row.refresh_from_db()
    assert [regenerated(s) for s in chain] == [1, 0, 1]
    assert regenerated(elsewhere[0]) == 0
    # Each chosen row was re-summarized over exactly its own range.
    assert [(s.first_episode_id, s.last_episode_id) for s in chain] == ranges
    assert chain[0].content != "Hand-written row 0."
    assert chain[1].content == "Hand-written row 1."
    assert elsewhere[0].content == "Hand-written row 0."
    # The regeneration is recorded with who asked for it and the text it replaced.
    revision = chain[2].revisions.get(source=REGENERATE)
    assert revision.actor == staff_user
    assert revision.content == "A staff member wrote this." and revision.curated
    assert Summary.objects.filter(session=session).count() == 3


def test_regenerate_message_counts_one_row(staff_browser, django_capture_on_commit_callbacks):
    _, chain = chained_session(rows=2)
    response = run_action(
        staff_browser, SUMMARIES_URL, "regenerate_selected", [chain[1].pk], django_capture_on_commit_callbacks
    )
    assert "Queued 1 summary row for regeneration." in messages_of(response)
    assert [regenerated(s) for s in chain] == [0, 1]


def test_rebuild_runs_once_per_distinct_session(staff_browser, django_capture_on_commit_callbacks):
    _, first_chain = chained_session(rows=2)
    _, second_chain = chained_session(rows=2)
    _, untouched_chain = chained_session(rows=2)
    chosen = [first_chain[0].pk, first_chain[1].pk, second_chain[1].pk]

    response = run_action(
        staff_browser, SUMMARIES_URL, "rebuild_session_chains", chosen, django_capture_on_commit_callbacks
    )

    assert "Queued a rebuild of 2 sessions' summary chains." in messages_of(response)
    # Two rows of the first session were chosen, and it was still rebuilt once.
    assert_rebuilt_once(first_chain)
    assert_rebuilt_once(second_chain)
    assert_untouched(untouched_chain)


def test_session_admin_rebuild_action(staff_browser, django_capture_on_commit_callbacks):
    session, chain = chained_session(rows=2)
    _, untouched_chain = chained_session(rows=1)
    response = run_action(
        staff_browser, SESSIONS_URL, "rebuild_chains", [session.pk], django_capture_on_commit_callbacks
    )
    assert "Queued a rebuild of 1 session's summary chain." in messages_of(response)
    assert_rebuilt_once(chain)
    assert_untouched(untouched_chain)


def test_actions_need_change_permission(client, django_capture_on_commit_callbacks):
    viewer = UserFactory(username="viewer", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_summary"))
    client.force_login(viewer)
    _, chain = chained_session(rows=1)
    for action in ("regenerate_selected", "rebuild_session_chains"):
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            client.post(SUMMARIES_URL, {"action": action, "_selected_action": [str(chain[0].pk)]})
        assert callbacks == []
    chain[0].refresh_from_db()
    assert regenerated(chain[0]) == 0 and chain[0].content == "Hand-written row 0."

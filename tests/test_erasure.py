"""Erasure: ``POST /api/me/erase/``, the admin action and ``erase_user``
leave no text of the user in any table, and leave everyone else alone."""

from __future__ import annotations

import io
import json

import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.core.management import call_command
from django.db import connection

from notes.models import Note
from sessions_app.models import ChatSession, Episode
from summaries import run_state
from summaries.coverage import refresh_coverage
from summaries.curation import summary_curate
from summaries.erasure import sessions_erase
from summaries.models import SummarizationState, Summary, SummaryRevision, UtilityCall
from tests.factories import ChatSessionFactory, EpisodeFactory, SummaryFactory

pytestmark = pytest.mark.django_db(transaction=False)

MARKER = "qzxjvw"  # a word no stemmer changes


def _values_with_marker() -> list[str]:
    """Every table, every column (text, JSON, tsvector, FTS5 shadow blobs): where the marker is."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        else:
            cursor.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
            )
        tables = [row[0] for row in cursor.fetchall()]
        found = []
        for table in tables:
            cursor.execute(f'SELECT * FROM "{table}"')
            for row in cursor.fetchall():
                for value in row:
                    if isinstance(value, (bytes, memoryview)):
                        hit = MARKER.encode() in bytes(value).lower()
                    else:
                        hit = MARKER in (json.dumps(value) if isinstance(value, (dict, list)) else str(value)).lower()
                    if hit:
                        found.append(f"{table}: {str(value)[:80]}")
    return found


def _plant(owner, staff_user) -> ChatSession:
    session = ChatSessionFactory(owner=owner, title=f"Trip {MARKER}", metadata={"note": f"about {MARKER}"})
    episodes = [
        EpisodeFactory(
            session=session,
            user_input=f"Tell me about {MARKER} number {i}",
            response=f"{MARKER.upper()} is a place {i}",
            metadata={"tag": MARKER},
        )
        for i in range(3)
    ]
    row = SummaryFactory(
        session=session,
        content=f"They talked about {MARKER}.",
        first_episode_id=episodes[0].pk,
        last_episode_id=episodes[1].pk,
    )
    summary_curate(summary=row, content=f"Curated: {MARKER} trip", actor=owner)
    # A note about the owner, written by hand (it came from no exchange).
    Note.objects.create(owner=owner, kind="fact", text=f"I collect {MARKER} stamps.", curated=True)
    UtilityCall.objects.create(
        session=session, summary=row, kind="fresh", outcome="ok", prompt_tokens=40, completion_tokens=9,
        first_episode_id=episodes[0].pk, last_episode_id=episodes[1].pk,
    )  # fmt: skip
    LogEntry.objects.log_actions(
        user_id=staff_user.pk, queryset=[session], action_flag=CHANGE, change_message=f"Renamed to {MARKER}"
    )
    LogEntry.objects.log_actions(
        user_id=staff_user.pk, queryset=[row], action_flag=CHANGE, change_message=f"Edited: {MARKER}"
    )
    return session


def _others(other_user) -> tuple[ChatSession, list]:
    theirs = ChatSessionFactory(owner=other_user, title="Theirs")
    episodes = [EpisodeFactory(session=theirs, user_input=f"keep this {i} walrus") for i in range(2)]
    SummaryFactory(session=theirs, content="Walrus talk.", first_episode_id=episodes[0].pk,
                   last_episode_id=episodes[1].pk)  # fmt: skip
    return theirs, _snapshot(theirs)


def _snapshot(session) -> list:
    return [
        list(ChatSession.objects.filter(pk=session.pk).values()),
        list(Episode.objects.filter(session=session).values()),
        list(Summary.objects.filter(session=session).values()),
        list(SummarizationState.objects.filter(session=session).values()),
    ]


def test_erase_leaves_no_trace_in_any_table(api_client, owner, other_user, staff_user, settings):
    settings.SUMMARY_THRESHOLD_TOKENS = 10**9
    _plant(owner, staff_user)
    theirs, before = _others(other_user)
    assert len(_values_with_marker()) >= 8
    calls_before = UtilityCall.objects.count()

    response = api_client.post("/api/me/erase/", {"confirm": "owner"}, format="json")

    assert response.status_code == 200, response.content
    assert response.json() == {
        "erased": {"sessions": 1, "episodes": 3, "summaries": 1, "revisions": 1, "notes": 1}
    }
    assert _values_with_marker() == []
    assert _snapshot(theirs) == before
    assert api_client.get("/api/sessions/").json()["results"] == []
    # The cost record stays, without its links; the account stays.
    assert UtilityCall.objects.count() == calls_before
    assert UtilityCall.objects.filter(session__isnull=True, summary__isnull=True).count() == 1
    assert LogEntry.objects.filter(object_repr="", change_message="").count() == 2
    owner.refresh_from_db()
    assert owner.is_active
    found = api_client.get("/api/search/", {"q": "walrus"})
    assert found.status_code == 200 and found.json()["results"] == []  # not the owner's


@pytest.mark.parametrize("body", [{}, {"confirm": "other"}, {"confirm": "Owner"}, {"confirm": ""}])
def test_erase_needs_the_username_as_confirm(api_client, session, body):
    EpisodeFactory(session=session)
    response = api_client.post("/api/me/erase/", body, format="json")
    assert response.status_code == 400
    assert "confirm" in response.json()
    assert ChatSession.objects.filter(pk=session.pk).exists()


def test_erase_needs_a_login(anon_client, session):
    assert anon_client.post("/api/me/erase/", {"confirm": "owner"}, format="json").status_code in (401, 403)
    assert ChatSession.objects.filter(pk=session.pk).exists()


def test_erase_user_command_and_admin_action(owner, other_user, staff_user, client, settings):
    settings.SUMMARY_THRESHOLD_TOKENS = 10**9
    _plant(owner, staff_user)
    theirs, before = _others(other_user)
    out = io.StringIO()
    call_command("erase_user", "owner", stdout=out)
    assert "1 sessions, 3 episodes, 1 summaries, 1 revisions" in out.getvalue()
    assert _values_with_marker() == []

    _plant(owner, staff_user)
    client.force_login(staff_user)
    response = client.post(
        "/admin/auth/user/", {"action": "erase_memory", "_selected_action": [owner.pk]}, follow=True
    )
    assert response.status_code == 200
    assert "Erased the memory of 1 users" in response.content.decode()
    assert _values_with_marker() == []
    assert _snapshot(theirs) == before
    assert owner.__class__.objects.filter(pk=owner.pk).exists()


def test_erase_runs_in_batches(owner, settings):
    settings.SUMMARY_THRESHOLD_TOKENS = 10**9
    sessions = [ChatSessionFactory(owner=owner) for _ in range(5)]
    for s in sessions:
        EpisodeFactory(session=s)
    erased = sessions_erase(session_pks=[s.pk for s in sessions], batch_size=2)
    assert (erased.sessions, erased.episodes) == (5, 5)
    assert not ChatSession.objects.filter(owner=owner).exists()


class ErasesDuringTheCall:
    """A model client whose call erases the session it summarizes, as an
    erasure arriving while a run waits on the model."""

    name = "erasing"

    def __init__(self, session_pk: int) -> None:
        self.session_pk = session_pk
        self.calls = 0

    def complete(self, prompt: str, **kwargs):
        from summaries.inference import Completion

        self.calls += 1
        sessions_erase(session_pks=[self.session_pk])
        return Completion(text=f"A summary of {MARKER}.", model="m", prompt_tokens=5, completion_tokens=3,
                          duration_ms=1)  # fmt: skip


@pytest.mark.django_db(transaction=True)
def test_a_run_in_flight_for_an_erased_session_recreates_nothing(owner, use_client, settings):
    # Autocommit, as a worker runs: the runner's own short writes for the
    # gone session fail on the foreign key at once, and are only logged.
    from summaries.runner import run_session

    settings.SUMMARY_THRESHOLD_TOKENS = 10**9
    session = ChatSessionFactory(owner=owner)
    for i in range(4):
        EpisodeFactory(session=session, user_input=f"question {i} " * 10)
    settings.SUMMARY_THRESHOLD_TOKENS = 10
    settings.SUMMARY_MIN_EPISODES = 2
    client = use_client(ErasesDuringTheCall(session.pk))
    run_session(session_pk=session.pk, owner="run-1", force=True)
    assert client.calls == 1
    assert not ChatSession.objects.filter(pk=session.pk).exists()
    # The call's cost is kept, unlinked, like any deleted session's calls.
    assert UtilityCall.objects.filter(session__isnull=True, kind=UtilityCall.Kind.FRESH).count() == 1
    assert not SummarizationState.objects.filter(session_id=session.pk).exists()
    assert not Summary.objects.filter(session_id=session.pk).exists()
    assert not SummaryRevision.objects.exists()
    # Whatever else comes late for the gone session fails harmlessly and creates nothing.
    assert run_state.ensure_state(session.pk) is False
    assert run_state.claim(session.pk, "late") is False
    refresh_coverage(session.pk)
    run_state.mark_queued(session.pk)
    assert run_session(session_pk=session.pk, owner="run-2").outcome.value == "busy"
    assert not SummarizationState.objects.filter(session_id=session.pk).exists()

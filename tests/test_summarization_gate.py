"""The trigger on the episode write path: the cheap gate, what it costs in
queries, when it enqueues, and that a broker outage never fails a write."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.db.models.signals import post_save
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from sessions_app.models import ChatSession, Episode
from sessions_app.services import episode_create
from summaries import run_state, selectors, tasks, triggers
from summaries.models import SummarizationState
from summaries.signals import episode_saved
from summaries.note_tasks import extract_session_notes
from summaries.tasks import rebuild_session, regenerate_summary, summarize_session
from tests.factories import ChatSessionFactory, EpisodeFactory, SummaryFactory

pytestmark = pytest.mark.django_db

LONG = "This reply is long enough that five of them pass the two hundred token threshold easily. " * 3


class Sent(list):
    """Records what would have gone to the broker."""


@pytest.fixture
def sent(monkeypatch) -> Sent:
    calls = Sent()
    for task in (summarize_session, regenerate_summary, rebuild_session):
        monkeypatch.setattr(
            task, "apply_async", lambda *a, _t=task, **kw: calls.append((_t.name, kw["kwargs"]))
        )
    # The note extraction a write also sends is a worker's task, not part of the write path's check.
    monkeypatch.setattr(extract_session_notes, "apply_async", lambda *a, **kw: None)
    return calls


def write(session, django_capture_on_commit_callbacks, *, response: str = LONG) -> Episode:
    """One episode write with its after-commit callbacks run, as in production."""
    with django_capture_on_commit_callbacks(execute=True):
        return episode_create(session=session, user_input="What about it?", response=response)


def state_of(session) -> SummarizationState | None:
    return SummarizationState.objects.filter(session=session).first()


def due_session(owner, **state) -> ChatSession:
    """A session whose five long episodes pass the gate, with a state row
    made of ``state`` if given."""
    session = ChatSessionFactory(owner=owner)
    EpisodeFactory.create_batch(5, session=session, response=LONG)
    if state:
        SummarizationState.objects.create(session=session, **state)
    return session


@contextmanager
def trigger_disconnected() -> Iterator[None]:
    """Episode writes without the summarization trigger (its post_save receiver)."""
    post_save.disconnect(sender=Episode, dispatch_uid="summaries.episode_saved")
    try:
        yield
    finally:
        post_save.connect(episode_saved, sender=Episode, dispatch_uid="summaries.episode_saved")


def test_no_enqueue_until_the_gate_fires(session, sent, django_capture_on_commit_callbacks):
    for _ in range(4):
        write(session, django_capture_on_commit_callbacks)
    assert sent == [] and state_of(session) is None  # 4 episodes: not enough
    write(session, django_capture_on_commit_callbacks)
    assert sent == [("summaries.tasks.summarize_session", {"session_pk": session.pk, "force": False})]
    assert state_of(session).state == "queued"


def test_no_enqueue_under_the_token_threshold(session, sent, django_capture_on_commit_callbacks):
    for _ in range(10):
        write(session, django_capture_on_commit_callbacks, response="ok")
    session.refresh_from_db()
    assert session.cached_total_tokens <= 200
    assert sent == []


def test_counting_starts_after_the_last_summarized_episode(session, sent, django_capture_on_commit_callbacks):
    eps = [write(session, django_capture_on_commit_callbacks) for _ in range(5)]
    sent.clear()
    SummarizationState.objects.filter(session=session).update(state="idle")
    SummaryFactory(session=session, first_episode_id=eps[0].pk, last_episode_id=eps[-1].pk)
    for _ in range(4):
        write(session, django_capture_on_commit_callbacks)
    assert sent == []
    write(session, django_capture_on_commit_callbacks)
    assert len(sent) == 1


def test_queued_and_running_sessions_are_not_enqueued_again(
    session, sent, django_capture_on_commit_callbacks
):
    for _ in range(5):
        write(session, django_capture_on_commit_callbacks)
    assert len(sent) == 1
    write(session, django_capture_on_commit_callbacks)  # still queued: the task will read this one too
    assert len(sent) == 1
    assert run_state.claim(session.pk, "task-a")
    write(session, django_capture_on_commit_callbacks)
    assert len(sent) == 1
    assert state_of(session).rerun_requested is True  # the run will look again before it ends


def test_a_recent_failure_waits_for_its_retry(session, sent, django_capture_on_commit_callbacks, settings):
    for _ in range(4):
        write(session, django_capture_on_commit_callbacks)
    SummarizationState.objects.create(
        session=session, state="failed", failed_at=timezone.now(), last_error="x"
    )
    write(session, django_capture_on_commit_callbacks)
    assert sent == []
    settings.SUMMARY_RETRY_AFTER_SECONDS = 0
    write(session, django_capture_on_commit_callbacks)
    assert len(sent) == 1 and state_of(session).state == "queued"


def test_write_path_adds_one_query_when_the_gate_does_not_fire(
    session, sent, django_capture_on_commit_callbacks
):
    write(session, django_capture_on_commit_callbacks)  # warm-up (content types, etc.)

    def queries() -> list[str]:
        with CaptureQueriesContext(connection) as ctx:
            write(session, django_capture_on_commit_callbacks)
        return [q["sql"] for q in ctx.captured_queries]

    with trigger_disconnected():
        without = queries()
    with_gate = queries()
    added = with_gate[len(without) :]
    assert len(with_gate) == len(without) + 1
    (gate_sql,) = added
    # Counters on the session and state rows: no read of the episodes at all.
    assert "COUNT(" not in gate_sql.upper() and "SUM(" not in gate_sql.upper()
    assert "sessions_app_episode" not in gate_sql
    assert sent == []


def test_write_path_adds_two_queries_when_the_gate_fires(session, sent, django_capture_on_commit_callbacks):
    for _ in range(4):
        write(session, django_capture_on_commit_callbacks)
    SummarizationState.objects.create(session=session)  # idle row present, as after the first run
    with trigger_disconnected(), CaptureQueriesContext(connection) as base:
        write(session, django_capture_on_commit_callbacks)
    Episode.objects.filter(pk=Episode.objects.order_by("-pk").first().pk).delete()
    with CaptureQueriesContext(connection) as ctx:
        write(session, django_capture_on_commit_callbacks)
    assert len(ctx.captured_queries) == len(base.captured_queries) + 2  # gate + conditional UPDATE
    assert len(sent) == 1


def test_one_gate_per_session_per_transaction(session, sent, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        with transaction.atomic():
            for _ in range(6):
                episode_create(session=session, user_input="q", response=LONG)
    assert len(callbacks) == 1
    callbacks[0]()
    assert len(sent) == 1


def test_nothing_is_sent_when_the_transaction_rolls_back(session, sent, django_capture_on_commit_callbacks):
    for _ in range(4):
        write(session, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        with pytest.raises(RuntimeError):
            with transaction.atomic():
                episode_create(session=session, user_input="q", response=LONG)
                raise RuntimeError("rolled back")
    assert sent == []


def test_a_write_after_a_rolled_back_savepoint_registers_the_check_again(
    session, sent, django_capture_on_commit_callbacks
):
    for _ in range(4):
        write(session, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        with transaction.atomic():
            with pytest.raises(RuntimeError):
                with transaction.atomic():  # a savepoint: its check goes with it
                    episode_create(session=session, user_input="q", response=LONG)
                    raise RuntimeError("rolled back")
            episode_create(session=session, user_input="q", response=LONG)
            episode_create(session=session, user_input="q", response=LONG)
    assert len(callbacks) == 1
    callbacks[0]()
    assert sent == [("summaries.tasks.summarize_session", {"session_pk": session.pk, "force": False})]


def test_a_check_registered_in_a_released_savepoint_still_counts(
    session, sent, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        with transaction.atomic():
            with transaction.atomic():
                episode_create(session=session, user_input="q", response=LONG)
            episode_create(session=session, user_input="q", response=LONG)
    assert len(callbacks) == 1


def test_a_write_after_a_rolled_back_transaction_is_checked(session, sent, django_capture_on_commit_callbacks):
    for _ in range(4):
        write(session, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        with pytest.raises(RuntimeError):
            with transaction.atomic():
                episode_create(session=session, user_input="q", response=LONG)
                raise RuntimeError("rolled back")
    assert sent == []
    write(session, django_capture_on_commit_callbacks)
    assert len(sent) == 1


@pytest.mark.django_db(transaction=True)
def test_real_rollback_then_commit_in_one_thread_sends_once(sent):
    """Real transactions (no test transaction around them): the check of a
    rolled-back transaction is gone, the next committed write's runs."""
    session = ChatSessionFactory()
    EpisodeFactory.create_batch(4, session=session, response=LONG)
    with pytest.raises(RuntimeError):
        with transaction.atomic():
            episode_create(session=session, user_input="q", response=LONG)
            raise RuntimeError("rolled back")
    assert sent == []
    with transaction.atomic():
        episode_create(session=session, user_input="q", response=LONG)
        episode_create(session=session, user_input="q", response=LONG)
    assert sent == [("summaries.tasks.summarize_session", {"session_pk": session.pk, "force": False})]


def test_raw_saves_trigger_nothing(session, sent, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        episode = Episode(session=session, user_input="q", response=LONG)
        episode_saved(Episode, episode, created=True, raw=True)
    assert callbacks == [] and sent == []


def test_a_broker_outage_never_fails_the_write(
    session, monkeypatch, django_capture_on_commit_callbacks, caplog
):
    def refuse(*args, **kwargs):
        raise ConnectionRefusedError("broker down")

    monkeypatch.setattr(summarize_session, "apply_async", refuse)
    episodes = [write(session, django_capture_on_commit_callbacks) for _ in range(6)]
    assert Episode.objects.filter(session=session).count() == len(episodes)
    # Back to idle, so the sweep sees the pending work.
    assert state_of(session).state == "idle"
    assert any(getattr(r, "outcome", "") == "enqueue_failed" for r in caplog.records)
    assert selectors.sessions_with_pending_work() == [session.pk]


def test_a_failing_gate_query_never_fails_the_write(session, monkeypatch, django_capture_on_commit_callbacks):
    asked: list[int] = []

    def broken(pk):
        asked.append(pk)
        raise RuntimeError("database hiccup")

    monkeypatch.setattr(selectors, "session_gate", broken)
    episode = write(session, django_capture_on_commit_callbacks)
    assert asked == [session.pk]  # the gate ran, after the commit, and failed
    assert list(Episode.objects.filter(session=session)) == [episode]


def test_gate_cost_does_not_depend_on_session_length(session):
    EpisodeFactory.create_batch(30, session=session, response=LONG)
    with CaptureQueriesContext(connection) as ctx:
        gate = selectors.session_gate(session.pk)
    assert len(ctx.captured_queries) == 1
    assert gate.fires and gate.covered_through == 0 and gate.state is None


# --- the sweep ------------------------------------------------------------------------------


def test_sweep_finds_lost_triggers_failures_stale_leases_and_lost_messages(owner, sent, settings):
    now = timezone.now()
    long_ago = now - timedelta(hours=1)
    lost_trigger = due_session(owner)
    idle = due_session(owner, state="idle")
    failed_old = due_session(owner, state="failed", failed_at=long_ago)
    failed_recent = due_session(owner, state="failed", failed_at=now)
    stale_lease = due_session(owner, state="running", lease_owner="dead", lease_expires_at=long_ago)
    live_lease = due_session(
        owner, state="running", lease_owner="alive", lease_expires_at=now + timedelta(hours=1)
    )
    queued_fresh = due_session(owner, state="queued")
    queued_lost = due_session(owner, state="queued")
    SummarizationState.objects.filter(session=queued_lost).update(updated_at=long_ago)
    not_due = ChatSessionFactory(owner=owner)
    EpisodeFactory.create_batch(3, session=not_due, response=LONG)

    found = set(tasks.sweep_pending())

    assert found == {lost_trigger.pk, idle.pk, failed_old.pk, stale_lease.pk, queued_lost.pk}
    assert {kw["session_pk"] for _, kw in sent} == found
    assert state_of(lost_trigger).state == "queued"
    assert state_of(stale_lease).state == "running"  # the new task takes the expired lease
    assert not found & {failed_recent.pk, live_lease.pk, queued_fresh.pk, not_due.pk}


def test_sweep_can_run_synchronously(owner, use_client):
    from tests.test_summarization_policy import FakeClient

    client = use_client(FakeClient())
    s = due_session(owner)
    assert tasks.sweep_pending(synchronous=True) == [s.pk]
    assert len(client.prompts) == 1 and state_of(s).state == "idle"


def test_regenerate_and_rebuild_are_queued_after_commit(
    session, sent, django_capture_on_commit_callbacks, staff_user
):
    summary = SummaryFactory(session=session)
    with django_capture_on_commit_callbacks(execute=True):
        triggers.summary_regenerate(summary=summary, actor=staff_user)
        triggers.session_rebuild(session=session, actor=staff_user)
    assert sent == [
        ("summaries.tasks.regenerate_summary", {"summary_pk": summary.pk, "actor_pk": staff_user.pk}),
        ("summaries.tasks.rebuild_session", {"session_pk": session.pk, "actor_pk": staff_user.pk}),
    ]
    assert state_of(session).state == "queued"


# --- management commands ----------------------------------------------------------------


def test_summarize_pending_command_enqueues_due_sessions(owner, sent):
    from io import StringIO

    from django.core.management import call_command

    s = due_session(owner)
    out = StringIO()
    call_command("summarize_pending", stdout=out)
    assert sent == [("summaries.tasks.summarize_session", {"session_pk": s.pk, "force": False})]
    assert "Enqueued 1 session" in out.getvalue()


def test_summarize_session_command_runs_forced_and_rebuilds(owner, fake_model, settings):
    from io import StringIO

    from django.core.management import CommandError, call_command

    from summaries.models import Summary

    settings.INFERENCE_BACKEND = "ollama"
    settings.INFERENCE_SERVICE_URL = fake_model.url
    s = ChatSessionFactory(owner=owner)
    EpisodeFactory.create_batch(2, session=s)  # under the gate: the command forces it
    out = StringIO()
    call_command("summarize_session", str(s.uuid), stdout=out)
    assert "1 model call(s); state idle, 0 episode(s)" in out.getvalue()
    row = Summary.objects.get(session=s)
    call_command("summarize_session", str(s.uuid), "--rebuild", stdout=out)
    assert len(fake_model.requests) == 2
    row.refresh_from_db()
    assert row.revisions.filter(source="rebuild").exists()
    with pytest.raises(CommandError):
        call_command("summarize_session", "not-a-uuid")


# --- tasks ----------------------------------------------------------------------------------


def test_tasks_retry_only_transient_errors_with_backoff_and_jitter():
    from summaries.inference import TransientInferenceError

    for task in (summarize_session, regenerate_summary, rebuild_session):
        assert task.acks_late is True
        assert task.autoretry_for == (TransientInferenceError,)
        assert task.retry_backoff and task.retry_jitter and task.max_retries >= 1


@pytest.mark.parametrize("transient", [True, False])
def test_eager_task_records_a_failure_without_raising(owner, use_client, transient):
    from summaries.inference import PermanentInferenceError, TransientInferenceError
    from tests.test_summarization_policy import FakeClient

    error = TransientInferenceError("HTTP 503") if transient else PermanentInferenceError("empty content")
    use_client(FakeClient(fail=[error]))
    s = due_session(owner)

    assert summarize_session.apply(kwargs={"session_pk": s.pk}).get() is None

    st = state_of(s)
    assert st.state == "failed" and str(error) in st.last_error
    assert summarize_session.apply(kwargs={"session_pk": s.pk}).get() == "done"
    assert state_of(s).state == "idle"


def test_a_forced_request_waits_for_a_busy_session_instead_of_being_dropped(owner):
    from celery.exceptions import Retry

    s = ChatSessionFactory(owner=owner)
    EpisodeFactory.create_batch(2, session=s)
    assert run_state.claim(s.pk, "someone-else")
    # Called directly, as a worker would run it (not eagerly).
    assert summarize_session(session_pk=s.pk) == "busy"
    with pytest.raises(Retry):
        summarize_session(session_pk=s.pk, force=True)


def test_beat_runs_the_sweep_task(settings, owner, sent):
    from nexus.celery import app

    entry = settings.CELERY_BEAT_SCHEDULE["summaries-sweep"]
    assert entry["task"] in app.tasks and entry["schedule"] > 0
    s = due_session(owner)
    assert app.tasks[entry["task"]].apply().get() == 1
    assert sent == [("summaries.tasks.summarize_session", {"session_pk": s.pk, "force": False})]

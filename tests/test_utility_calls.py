"""The cost record: one ``UtilityCall`` row per utility-model call, whatever
came of it, and the usage report's exact figures built from them."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.models.signals import pre_save

from sessions_app.models import Episode
from summaries.curation import summary_curate
from summaries.inference import PermanentInferenceError, TransientInferenceError, get_client
from summaries.models import SummarizationState, Summary, UtilityCall
from summaries.runner import rebuild_chain, regenerate_row, run_session
from tests.factories import ChatSessionFactory, EpisodeFactory, SummaryFactory
from tests.fake_model_server import reply_text
from tests.test_summarization_policy import FakeClient, add_episodes, rebuild_losing_its_lease

pytestmark = pytest.mark.django_db

OWNER = "task-1"


@pytest.fixture
def ollama(fake_model, settings):
    settings.INFERENCE_BACKEND = "ollama"
    settings.INFERENCE_SERVICE_URL = fake_model.url
    settings.UTILITY_MODEL = "qwen2.5:1.5b"
    return get_client("ollama")


def reported(record: dict) -> tuple[int, int]:
    """The token counts the fake server reported for one answered request."""
    messages = record["body"]["messages"]
    prompt = [m["content"] for m in messages if m["role"] == "user"][-1]
    everything = " ".join(m["content"] for m in messages)
    return len(everything.split()), len(reply_text(prompt).split())


def calls_of(session) -> list[UtilityCall]:
    return list(UtilityCall.objects.filter(session=session).order_by("pk"))


# --- against the fake model server --------------------------------------------------


def test_a_failed_then_answered_call_are_both_counted_with_the_servers_tokens(
    session, ollama, fake_model, staff_client
):
    episodes = add_episodes(session, 5)
    fake_model.set_mode("ok", fail_next=1, fail_mode="http_500")
    with pytest.raises(TransientInferenceError):
        run_session(session_pk=session.pk, owner=OWNER, client=ollama)
    run_session(session_pk=session.pk, owner=OWNER, client=ollama)

    failed, answered = calls_of(session)
    row = Summary.objects.get(session=session)
    assert [r["mode"] for r in fake_model.requests] == ["http_500", "ok"]
    sent, received = reported(fake_model.requests[1])
    assert (failed.outcome, failed.summary_id, failed.prompt_tokens, failed.completion_tokens) == (
        "transient_error",
        None,
        0,
        0,
    )
    assert (answered.outcome, answered.summary_id, answered.kind) == ("ok", row.pk, "fresh")
    assert (answered.prompt_tokens, answered.completion_tokens) == (sent, received)
    assert answered.model == "qwen2.5:1.5b"
    for call in (failed, answered):
        assert (call.first_episode_id, call.last_episode_id) == (episodes[0].pk, episodes[-1].pk)

    body = staff_client.get("/api/usage/", {"session": str(session.uuid)}).json()
    (usage,) = body["sessions"]
    assert (usage["utility_calls"], usage["failed_calls"], usage["dropped_calls"]) == (2, 1, 0)
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == (sent, received)
    assert usage["utility_duration_ms"] == failed.duration_ms + answered.duration_ms
    assert (body["totals"]["utility_calls"], body["totals"]["failed_calls"]) == (2, 1)
    assert (body["totals"]["prompt_tokens"], body["totals"]["completion_tokens"]) == (sent, received)


def test_calls_folded_into_one_row_are_all_counted(session, ollama, fake_model, staff_client):
    add_episodes(session, 5)
    run_session(session_pk=session.pk, owner=OWNER, client=ollama)
    add_episodes(session, 5)
    run_session(session_pk=session.pk, owner=OWNER, client=ollama)

    row = Summary.objects.get(session=session)  # updated cumulatively: one row
    first, second = calls_of(session)
    assert (first.kind, second.kind) == ("fresh", "update")
    assert first.summary_id == second.summary_id == row.pk
    figures = [reported(r) for r in fake_model.requests]
    # The row keeps its last call's figures; the report adds up both calls.
    assert (row.prompt_tokens, row.completion_tokens) == figures[-1]
    usage = staff_client.get("/api/usage/", {"session": str(session.uuid)}).json()["sessions"][0]
    assert usage["utility_calls"] == 2
    assert usage["prompt_tokens"] == sum(f[0] for f in figures) > row.prompt_tokens
    assert usage["completion_tokens"] == sum(f[1] for f in figures)


def test_an_empty_answer_is_a_permanent_failure_with_its_time(session, ollama, fake_model):
    add_episodes(session, 5)
    fake_model.set_mode("empty_content")
    with pytest.raises(PermanentInferenceError):
        run_session(session_pk=session.pk, owner=OWNER, client=ollama)
    (call,) = calls_of(session)
    assert (call.outcome, call.prompt_tokens, call.completion_tokens, call.summary_id) == (
        "permanent_error",
        0,
        0,
        None,
    )
    assert not Summary.objects.filter(session=session).exists()


# --- dropped answers, regenerate and rebuild ------------------------------------------------


def test_an_answer_dropped_as_stale_still_counts_its_tokens(session, staff_user):
    add_episodes(session, 5)
    client = FakeClient()
    run_session(session_pk=session.pk, owner=OWNER, client=client)
    row = Summary.objects.get()
    add_episodes(session, 5)
    client.before_answer = lambda _n: summary_curate(summary=row, content="Edited.", actor=staff_user)
    run_session(session_pk=session.pk, owner=OWNER, client=client)

    first, dropped, new_row = calls_of(session)
    assert (dropped.kind, dropped.outcome, dropped.summary_id) == ("update", "dropped_stale", None)
    assert dropped.prompt_tokens > 0 and dropped.completion_tokens > 0
    assert first.summary_id == row.pk
    assert new_row.outcome == "ok" and new_row.summary_id not in (None, row.pk)


def test_an_answer_dropped_when_the_lease_was_taken_over_is_recorded(session):
    add_episodes(session, 5)
    client = FakeClient()
    client.before_answer = lambda _n: SummarizationState.objects.filter(session=session).update(
        lease_owner="usurper"
    )
    run_session(session_pk=session.pk, owner=OWNER, client=client)
    (call,) = calls_of(session)
    assert (call.outcome, call.summary_id) == ("dropped_stale", None)


def test_regenerate_and_rebuild_calls_are_recorded_and_linked(session, staff_user):
    eps = add_episodes(session, 10)
    client = FakeClient()
    run_session(session_pk=session.pk, owner=OWNER, client=client)
    row = Summary.objects.get()
    regenerate_row(summary_pk=row.pk, owner="regen", actor_pk=staff_user.pk, client=client)
    rebuild_chain(session_pk=session.pk, owner="rebuild", actor_pk=staff_user.pk, client=client)

    calls = calls_of(session)
    assert [c.kind for c in calls] == ["fresh", "regenerate", "rebuild"]
    assert all(c.outcome == "ok" and c.summary_id == row.pk for c in calls)
    assert all((c.first_episode_id, c.last_episode_id) == (eps[0].pk, eps[-1].pk) for c in calls)
    assert len(calls) == len(client.prompts)


def test_a_rebuild_over_several_rows_links_each_call_to_its_row(session, settings):
    eps = add_episodes(session, 12, size=900)
    SummaryFactory(session=session, first_episode_id=eps[0].pk, last_episode_id=eps[-1].pk, content="old")
    settings.SUMMARY_MAX_TOKENS = 1  # every rebuilt chunk closes its row
    client = FakeClient()
    rebuild_chain(session_pk=session.pk, owner="rebuild", client=client)

    rows = {(r.first_episode_id, r.last_episode_id): r.pk for r in Summary.objects.chain(session.pk)}
    calls = calls_of(session)
    assert len(rows) > 1 and len(calls) == len(client.prompts) == len(rows)
    for call in calls:
        assert call.kind == "rebuild"
        assert call.summary_id == rows[(call.first_episode_id, call.last_episode_id)]


def test_a_rebuild_that_loses_its_lease_marks_its_answers_dropped(session):
    rebuild_losing_its_lease(session)
    (call,) = calls_of(session)
    assert (call.kind, call.outcome, call.summary_id) == ("rebuild", "dropped_stale", None)


def test_calls_outlive_a_deleted_row_and_their_session_unlinked(session):
    add_episodes(session, 5)
    run_session(session_pk=session.pk, owner=OWNER, client=FakeClient())
    Summary.objects.filter(session=session).delete()
    (call,) = calls_of(session)
    assert call.summary_id is None
    session.delete()
    # The cost record stays (usage totals keep it), without the link.
    assert list(UtilityCall.objects.values_list("session_id", "summary_id")) == [(None, None)]


# --- written on its own, never with the model call inside a transaction ----------------------


@pytest.mark.django_db(transaction=True)
def test_each_call_is_written_outside_any_transaction(owner, settings):
    settings.SUMMARY_THRESHOLD_TOKENS = 10**9  # only the forced runs below summarize
    session = ChatSessionFactory(owner=owner)
    for _ in range(5):
        EpisodeFactory(session=session)
    atomic_when_written: list[bool] = []
    atomic_during_call: list[bool] = []

    def note(sender, instance, **kwargs) -> None:
        atomic_when_written.append(connection.in_atomic_block)

    client = FakeClient(fail=[TransientInferenceError("HTTP 500")])
    client.before_answer = lambda _n: atomic_during_call.append(connection.in_atomic_block)
    pre_save.connect(note, sender=UtilityCall, dispatch_uid="test-utility-call-atomic")
    try:
        with pytest.raises(TransientInferenceError):
            run_session(session_pk=session.pk, owner=OWNER, client=client, force=True)
        run_session(session_pk=session.pk, owner=OWNER, client=client, force=True)
    finally:
        pre_save.disconnect(sender=UtilityCall, dispatch_uid="test-utility-call-atomic")
    assert atomic_during_call == [False, False]
    assert atomic_when_written == [False, False]
    assert [c.outcome for c in calls_of(session)] == ["transient_error", "ok"]
    assert Episode.objects.filter(session=session).count() == 5

"""The summarization policy, in process: prompts as the model server receives
them, the fresh/update/new-row table, the 3000-character cap with
backlog folding, tiling ranges, failures, and the lease rules of a run."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

import pytest

from sessions_app.models import Episode
from sessions_app.tokens import count_tokens
from summaries import run_state
from summaries.curation import summary_curate
from summaries.inference import Completion, PermanentInferenceError, TransientInferenceError, get_client
from summaries.models import SummarizationState, Summary, SummaryRevision
from summaries.policy import Action, RowSnapshot, build_chunk, choose_action
from summaries.prompts import FRESH_SUMMARY_PROMPT, UPDATE_SUMMARY_PROMPT
from summaries.runner import RunOutcome, RunResult, rebuild_chain, regenerate_row, run_session
from summaries.selectors import summarization_status
from summaries.store import StoreOutcome
from tests.factories import EpisodeFactory, SummaryFactory
from tests.fake_model_server import reply_text

pytestmark = pytest.mark.django_db

OWNER = "task-1"


class FakeClient:
    """A model client that answers like the fake server and remembers prompts.

    ``before_answer`` runs while the "call" is in flight: tests use it to
    change the world under a pass, the way another process could.
    """

    def __init__(self, fail: list[Exception] | None = None) -> None:
        self.prompts: list[str] = []
        self.calls: list[dict] = []
        self.fail = list(fail or [])
        self.before_answer: Callable[[int], None] | None = None

    def complete(self, prompt: str, *, model=None, temperature=None, max_tokens=None) -> Completion:
        self.prompts.append(prompt)
        self.calls.append({"model": model, "temperature": temperature, "max_tokens": max_tokens})
        if self.before_answer is not None:
            self.before_answer(len(self.prompts))
        if self.fail:
            raise self.fail.pop(0)
        text = reply_text(prompt)
        return Completion(text, model or "m", count_tokens(prompt), count_tokens(text), 7)


def context_of(pairs: Iterable[tuple[str, str]]) -> str:
    """The episode text production writes into a prompt (``build_chunk``), uncapped."""
    episodes = [(i, user, reply) for i, (user, reply) in enumerate(pairs, start=1)]
    return build_chunk(episodes, max_chars=10**9).context


def add_episodes(session, n: int, *, size: int = 0) -> list[Episode]:
    """``n`` episodes; ``size`` pads each response to about that many characters."""
    episodes = []
    for i in range(n):
        filler = (
            "It explains the topic in some detail, weighing the arguments on each side, "
            "giving two worked examples and a short list of sources to read next."
        )
        response = f"Reply {i}. " + ("x" * max(size - 10, 0) if size else filler)
        episodes.append(EpisodeFactory(session=session, response=response))
    return episodes


def assert_tiles(session) -> list[Summary]:
    """Rows are ordered, do not overlap, leave no gap, and start at the first
    episode; each names its range by its episodes' positions too."""
    rows = list(Summary.objects.chain(session.pk))
    numbered = dict(Episode.objects.for_session(session.pk).values_list("pk", "position"))
    covered = [pk for pk in numbered if rows and pk <= rows[-1].last_episode_id]
    position = 0
    for row in rows:
        span = [pk for pk in covered if row.first_episode_id <= pk <= row.last_episode_id]
        assert span, f"row {row.episode_range} covers no episode"
        assert span == covered[position : position + len(span)], (
            f"row {row.episode_range} overlaps or leaves a gap"
        )
        assert (row.first_position, row.last_position) == (numbered[span[0]], numbered[span[-1]])
        position += len(span)
    assert position == len(covered)
    return rows


@pytest.fixture
def ollama(fake_model, settings):
    settings.INFERENCE_BACKEND = "ollama"
    settings.INFERENCE_SERVICE_URL = fake_model.url
    return get_client("ollama")


# --- pure decisions -------------------------------------------------------------


def _snap(**kw) -> RowSnapshot:
    from django.utils import timezone

    base = dict(
        pk=1,
        content="s",
        token_count=10,
        first_episode_id=1,
        last_episode_id=5,
        curated=False,
        updated_at=timezone.now(),
    )
    base.update(kw)
    return RowSnapshot(**base)


def test_choose_action_follows_the_seed_table():
    assert choose_action(None, max_tokens=800) is Action.CREATE
    assert choose_action(_snap(token_count=799), max_tokens=800) is Action.UPDATE
    assert choose_action(_snap(token_count=800), max_tokens=800) is Action.CREATE
    assert choose_action(_snap(token_count=10, curated=True), max_tokens=800) is Action.CREATE


def test_build_chunk_takes_oldest_within_cap_and_cuts_only_a_single_long_episode():
    eps = [(i, "q" * 10, "a" * 1000) for i in range(1, 6)]
    chunk = build_chunk(eps, max_chars=3000)
    assert chunk.episode_ids == (1, 2)  # a third would pass 3000 characters
    assert len(chunk.context) <= 3000 and chunk.truncated_chars == 0
    long_one = build_chunk([(9, "question", "b" * 5000), (10, "x", "y")], max_chars=3000)
    assert long_one.episode_ids == (9,)
    assert len(long_one.context) == 3000
    assert long_one.context.endswith("b" * 100)  # the most recent text is kept
    assert long_one.truncated_chars == len(context_of([("question", "b" * 5000)])) - 3000


# --- prompts as the server receives them ------------------------------------------


def test_fresh_summary_request_is_exact(session, ollama, fake_model, settings):
    episodes = add_episodes(session, 6)
    result = run_session(session_pk=session.pk, owner=OWNER, client=ollama)

    assert result.outcome is RunOutcome.DONE and result.calls == 1
    (request,) = fake_model.requests
    body = request["body"]
    context = context_of((e.user_input, e.response) for e in episodes)
    expected = FRESH_SUMMARY_PROMPT.format(context=context)
    assert request["path"] == "/api/chat"
    assert body["messages"] == [{"role": "user", "content": expected}]
    assert body["model"] == settings.UTILITY_MODEL
    assert body["stream"] is False
    assert body["options"]["temperature"] == 0.2
    assert body["options"]["num_predict"] == 500

    (row,) = assert_tiles(session)
    assert (row.first_episode_id, row.last_episode_id) == (episodes[0].pk, episodes[-1].pk)
    assert row.content == reply_text(expected)
    assert row.token_count == count_tokens(row.content)
    assert row.model and row.prompt_tokens > 0 and row.completion_tokens > 0
    assert row.curated is False and row.truncated_chars == 0
    assert SummarizationState.objects.get(session=session).state == "idle"


def test_cumulative_update_carries_the_previous_summary_and_extends_the_range(session, ollama, fake_model):
    first = add_episodes(session, 5)
    run_session(session_pk=session.pk, owner=OWNER, client=ollama)
    row = Summary.objects.get(session=session)
    previous = row.content
    second = add_episodes(session, 5)

    run_session(session_pk=session.pk, owner=OWNER, client=ollama)

    prompt = fake_model.requests[-1]["body"]["messages"][0]["content"]
    context = context_of((e.user_input, e.response) for e in second)
    assert prompt == UPDATE_SUMMARY_PROMPT.format(existing_summary=previous, context=context)
    (updated,) = assert_tiles(session)
    assert updated.pk == row.pk
    assert (updated.first_episode_id, updated.last_episode_id) == (first[0].pk, second[-1].pk)
    assert updated.content == reply_text(prompt)
    revision = SummaryRevision.objects.get(summary=row)
    assert revision.source == SummaryRevision.Source.AUTOMATIC
    assert (revision.content, revision.last_episode_id) == (previous, first[-1].pk)


def test_latest_row_over_the_limit_starts_a_new_row_with_the_fresh_prompt(session, settings):
    first = add_episodes(session, 5)
    SummaryFactory(
        session=session,
        first_episode_id=first[0].pk,
        last_episode_id=first[-1].pk,
        content="long " * 10,
        token_count=settings.SUMMARY_MAX_TOKENS,
    )
    second = add_episodes(session, 5)
    client = FakeClient()

    run_session(session_pk=session.pk, owner=OWNER, client=client)

    assert client.prompts[0].startswith(FRESH_SUMMARY_PROMPT.split("{")[0])
    rows = assert_tiles(session)
    assert len(rows) == 2
    assert (rows[1].first_episode_id, rows[1].last_episode_id) == (second[0].pk, second[-1].pk)


def test_curated_rows_are_never_updated(session, staff_user):
    first = add_episodes(session, 5)
    client = FakeClient()
    run_session(session_pk=session.pk, owner=OWNER, client=client)
    row = Summary.objects.get(session=session)
    summary_curate(summary=row, content="A person's careful summary.", actor=staff_user)
    add_episodes(session, 5)

    run_session(session_pk=session.pk, owner=OWNER, client=client)

    rows = assert_tiles(session)
    assert len(rows) == 2
    rows[0].refresh_from_db()
    assert rows[0].content == "A person's careful summary." and rows[0].curated
    assert rows[0].last_episode_id == first[-1].pk
    assert "A person's careful summary." not in client.prompts[-1]


def test_call_parameters_come_from_settings(session, settings):
    add_episodes(session, 5)
    client = FakeClient()
    run_session(session_pk=session.pk, owner=OWNER, client=client)
    assert client.calls == [{"model": settings.UTILITY_MODEL, "temperature": 0.2, "max_tokens": 500}]


# --- the cap, backlog folding, tiling ---------------------------------------------------


def test_backlog_over_the_cap_is_folded_oldest_first_and_nothing_goes_unseen(session, ollama, fake_model):
    episodes = add_episodes(session, 12, size=900)

    run_session(session_pk=session.pk, owner=OWNER, client=ollama)
    folded = len(fake_model.requests)
    # Full chunks while the gate fires; a remainder under SUMMARY_MIN_EPISODES waits.
    assert folded > 1
    assert summarization_status(session, viewer=None)["pending_episodes"] < 5
    run_session(session_pk=session.pk, owner=OWNER, client=ollama, force=True)

    prompts = [r["body"]["messages"][0]["content"] for r in fake_model.requests]
    assert len(prompts) > folded
    seen: list[str] = []
    for n, prompt in enumerate(prompts):
        marker = "\nConversation:\n" if n == 0 else "\nNew exchanges:\n"
        context = prompt.split(marker, 1)[1]
        assert len(context) <= 3000
        seen += [e.user_input for e in episodes if e.user_input + "\n" in context]
    # Every episode was sent exactly once, in order.
    assert seen == [e.user_input for e in episodes]
    (row,) = assert_tiles(session)  # one row, updated as the backlog folded in
    assert (row.first_episode_id, row.last_episode_id) == (episodes[0].pk, episodes[-1].pk)
    assert row.truncated_chars == 0
    assert SummaryRevision.objects.filter(summary=row).count() == len(prompts) - 1


def test_only_a_single_over_long_episode_is_cut_and_the_cut_is_recorded(session, ollama, fake_model):
    EpisodeFactory(
        session=session, user_input="Tell me everything.", response="start " + "z" * 5000 + " THE END"
    )
    add_episodes(session, 4)

    run_session(session_pk=session.pk, owner=OWNER, client=ollama)

    first_prompt = fake_model.requests[0]["body"]["messages"][0]["content"]
    context = first_prompt.split("\nConversation:\n", 1)[1]
    assert len(context) == 3000 and context.endswith(" THE END")
    assert "Tell me everything." not in context
    (row,) = assert_tiles(session)
    full = len(context_of([("Tell me everything.", "start " + "z" * 5000 + " THE END")]))
    assert row.truncated_chars == full - 3000


def test_rows_tile_across_many_runs_and_new_rows(session, settings):
    # Every row is full after one run, so the runs must make new rows: the fake
    # model's summary ("Summary of 5 exchanges [digest].") is 10 to 15 tokens as
    # its digest goes, so a limit of 12 left about a third of the rows open.
    settings.SUMMARY_MAX_TOKENS = 10
    client = FakeClient()
    for _ in range(6):
        add_episodes(session, 5)
        run_session(session_pk=session.pk, owner=OWNER, client=client)
    rows = assert_tiles(session)
    assert len(rows) >= 3
    assert rows[-1].last_episode_id == Episode.objects.for_session(session.pk).last().pk


def test_fewer_than_min_new_episodes_do_not_fire(session):
    add_episodes(session, 4)
    client = FakeClient()
    assert run_session(session_pk=session.pk, owner=OWNER, client=client).calls == 0
    assert not Summary.objects.exists()
    assert run_session(session_pk=session.pk, owner=OWNER, client=client, force=True).calls == 1


# --- failures ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["http_500", "malformed_json", "empty_content", "http_400"])
def test_a_failed_call_stores_nothing_and_marks_the_state(session, ollama, fake_model, mode):
    add_episodes(session, 5)
    fake_model.set_mode(mode)

    with pytest.raises((TransientInferenceError, PermanentInferenceError)) as info:
        run_session(session_pk=session.pk, owner=OWNER, client=ollama)

    assert info.value.transient is (mode == "http_500")
    assert not Summary.objects.exists()
    assert Episode.objects.filter(session=session).count() == 5
    state = SummarizationState.objects.get(session=session)
    assert state.state == "failed" and state.last_error and state.failed_at
    assert state.lease_owner == ""  # the retry (same task id) or another task may run
    status = summarization_status(session, viewer=None)
    assert status["state"] == "failed" and status["pending_episodes"] == 5

    fake_model.set_mode("ok")
    run_session(session_pk=session.pk, owner=OWNER, client=ollama)
    (row,) = assert_tiles(session)
    assert row.content.startswith("Summary of 5 exchanges")
    assert summarization_status(session, viewer=None) == {
        **summarization_status(session, viewer=None),
        "state": "idle",
        "last_error": "",
    }


def test_a_failure_mid_backlog_keeps_the_chunks_already_stored(session):
    add_episodes(session, 12, size=900)
    client = FakeClient(fail=[])
    client.before_answer = lambda n: client.fail.append(TransientInferenceError("boom")) if n == 2 else None
    with pytest.raises(TransientInferenceError):
        run_session(session_pk=session.pk, owner=OWNER, client=client)
    (row,) = assert_tiles(session)
    assert row.content == reply_text(client.prompts[0])


# --- leases, stale results, reruns ----------------------------------------------------------


def test_a_second_run_is_a_no_op_while_the_lease_is_held(session):
    add_episodes(session, 5)
    assert run_state.claim(session.pk, "other-task")
    client = FakeClient()
    result = run_session(session_pk=session.pk, owner=OWNER, client=client)
    assert result.outcome is RunOutcome.BUSY and client.prompts == []
    assert SummarizationState.objects.get(session=session).rerun_requested is True


def test_a_redelivered_task_takes_over_its_own_lease(session):
    add_episodes(session, 5)
    assert run_state.claim(session.pk, OWNER)  # the killed first delivery held it
    result = run_session(session_pk=session.pk, owner=OWNER, client=FakeClient())
    assert result.outcome is RunOutcome.DONE and result.calls == 1


def test_an_expired_lease_can_be_taken_over(session, settings):
    add_episodes(session, 5)
    settings.SUMMARY_LEASE_SECONDS = -1  # already expired when written
    assert run_state.claim(session.pk, "dead-task")
    settings.SUMMARY_LEASE_SECONDS = 60
    assert run_session(session_pk=session.pk, owner=OWNER, client=FakeClient()).calls == 1


def test_a_result_is_dropped_when_the_lease_was_taken_over_during_the_call(session, settings):
    add_episodes(session, 5)
    client = FakeClient()

    def takeover(_n: int) -> None:
        SummarizationState.objects.filter(session=session).update(lease_owner="usurper")

    client.before_answer = takeover
    result = run_session(session_pk=session.pk, owner=OWNER, client=client)
    assert result.outcome is RunOutcome.LOST
    assert result.stored == [StoreOutcome.LOST_LEASE]
    assert not Summary.objects.exists()


def test_a_stale_update_is_dropped_when_staff_curated_the_row_during_the_call(session, staff_user):
    add_episodes(session, 5)
    client = FakeClient()
    run_session(session_pk=session.pk, owner=OWNER, client=client)
    row = Summary.objects.get()
    add_episodes(session, 5)

    def curate(_n: int) -> None:
        summary_curate(summary=row, content="Edited by staff.", actor=staff_user)

    client.before_answer = curate
    result = run_session(session_pk=session.pk, owner=OWNER, client=client)

    # The stale update is dropped, then the run re-plans: a new row after the curated one.
    assert result.stored[0] is StoreOutcome.STALE
    rows = assert_tiles(session)
    assert rows[0].content == "Edited by staff." and len(rows) == 2
    assert not SummaryRevision.objects.filter(source="automatic").exists()


def test_a_trigger_during_the_run_makes_it_check_the_gate_again(session):
    add_episodes(session, 5)
    client = FakeClient()

    def new_writes(n: int) -> None:
        if n == 1:
            add_episodes(session, 5)
            run_state.mark_triggered(session_pk=session.pk, state="running")

    client.before_answer = new_writes
    result = run_session(session_pk=session.pk, owner=OWNER, client=client)
    assert result.calls == 2
    (row,) = assert_tiles(session)
    assert row.last_episode_id == Episode.objects.for_session(session.pk).last().pk
    state = SummarizationState.objects.get(session=session)
    assert (state.state, state.rerun_requested, state.lease_owner) == ("idle", False, "")


# --- regenerate and rebuild -----------------------------------------------------------------


def test_regenerate_resummarizes_exactly_the_rows_range(session, staff_user):
    episodes = add_episodes(session, 10)
    client = FakeClient()
    run_session(session_pk=session.pk, owner=OWNER, client=client)
    row = Summary.objects.get()
    summary_curate(summary=row, content="Staff text.", actor=staff_user)

    regenerate_row(
        summary_pk=row.pk, owner="regen", actor_pk=staff_user.pk, client=client, replace_curated=True
    )

    row.refresh_from_db()
    context = context_of((e.user_input, e.response) for e in episodes)
    assert client.prompts[-1] == FRESH_SUMMARY_PROMPT.format(context=context)
    assert row.content == reply_text(client.prompts[-1]) and row.curated is False
    assert row.replaced_curation is True
    assert (row.first_episode_id, row.last_episode_id) == (episodes[0].pk, episodes[-1].pk)
    revision = row.revisions.first()
    assert (
        revision.source == "regenerate" and revision.content == "Staff text." and revision.actor == staff_user
    )


def test_a_row_curated_after_the_request_is_not_regenerated_without_the_confirmation(session, staff_user):
    add_episodes(session, 10)
    client = FakeClient()
    run_session(session_pk=session.pk, owner=OWNER, client=client)
    row = Summary.objects.get()
    summary_curate(summary=row, content="Staff text.", actor=staff_user)
    calls = len(client.prompts)

    regenerate_row(summary_pk=row.pk, owner="regen", actor_pk=staff_user.pk, client=client)

    row.refresh_from_db()
    assert (row.content, row.curated, row.replaced_curation) == ("Staff text.", True, False)
    assert len(client.prompts) == calls  # no model call either
    assert not row.revisions.filter(source="regenerate").exists()


def test_regenerating_an_uncurated_row_replaces_no_curation(session):
    add_episodes(session, 10)
    client = FakeClient()
    run_session(session_pk=session.pk, owner=OWNER, client=client)
    row = Summary.objects.get()
    regenerate_row(summary_pk=row.pk, owner="regen", client=client, replace_curated=True)
    row.refresh_from_db()
    assert row.revisions.filter(source="regenerate").exists()
    assert (row.curated, row.replaced_curation) == (False, False)


def test_rebuild_keeps_curated_rows_and_refolds_the_rest_so_the_chain_tiles(session, staff_user):
    eps = add_episodes(session, 15)
    # A broken chain: a gap and an overlap around a curated row.
    SummaryFactory(session=session, first_episode_id=eps[0].pk, last_episode_id=eps[3].pk, content="a")
    curated = SummaryFactory(
        session=session,
        first_episode_id=eps[5].pk,
        last_episode_id=eps[7].pk,
        content="Curated.",
        curated=True,
    )
    SummaryFactory(session=session, first_episode_id=eps[6].pk, last_episode_id=eps[11].pk, content="b")
    client = FakeClient()

    rebuild_chain(session_pk=session.pk, owner="rebuild", actor_pk=staff_user.pk, client=client)

    rows = assert_tiles(session)
    # Refolded around the curated row; the rebuilt last row then took in the
    # tail after the old chain (a rebuild runs forced, like a manual request).
    assert [(r.first_episode_id, r.last_episode_id) for r in rows] == [
        (eps[0].pk, eps[4].pk),
        (eps[5].pk, eps[7].pk),
        (eps[8].pk, eps[-1].pk),
    ]
    assert Summary.objects.get(pk=curated.pk).content == "Curated."
    assert SummaryRevision.objects.filter(source="rebuild", actor=staff_user).count() == 2


# --- logs ---------------------------------------------------------------------------------


def test_one_structured_log_record_per_attempt_without_user_text(session, caplog, settings):
    settings.LOG_CONTENT = False
    add_episodes(session, 5)
    client = FakeClient(fail=[TransientInferenceError("HTTP 500")])
    with caplog.at_level(logging.INFO, logger="nexus.summarization"):
        with pytest.raises(TransientInferenceError):
            run_session(session_pk=session.pk, owner=OWNER, client=client)
        run_session(session_pk=session.pk, owner=OWNER, client=client)
    records = [r for r in caplog.records if r.name == "nexus.summarization" and hasattr(r, "episode_range")]
    assert [r.outcome for r in records] == ["transient_error", "created"]
    for record in records:
        assert record.session == str(session.uuid)
        for field in ("episode_range", "prompt_tokens", "completion_tokens", "duration_ms", "error"):
            assert hasattr(record, field)
        assert not hasattr(record, "prompt")
        assert "Question number" not in record.getMessage()
    assert records[0].error and records[1].prompt_tokens > 0


def test_log_content_adds_the_texts(session, caplog, settings):
    settings.LOG_CONTENT = True
    add_episodes(session, 5)
    with caplog.at_level(logging.INFO, logger="nexus.summarization"):
        run_session(session_pk=session.pk, owner=OWNER, client=FakeClient())
    (record,) = [r for r in caplog.records if hasattr(r, "episode_range")]
    assert "Question number" in record.prompt and record.answer.startswith("Summary of")


def rebuild_losing_its_lease(session) -> tuple[RunResult, FakeClient]:
    """A rebuild of a two-call backlog whose lease another run takes during the first call."""
    eps = add_episodes(session, 12, size=900)
    SummaryFactory(session=session, first_episode_id=eps[0].pk, last_episode_id=eps[-1].pk, content="old")
    client = FakeClient()

    def takeover(n: int) -> None:
        if n == 1:
            SummarizationState.objects.filter(session=session).update(lease_owner="usurper")

    client.before_answer = takeover
    return rebuild_chain(session_pk=session.pk, owner="rebuild", client=client), client


def test_a_rebuild_stops_and_stores_nothing_when_its_lease_is_taken_over(session):
    result, client = rebuild_losing_its_lease(session)

    assert result.outcome is RunOutcome.LOST and len(client.prompts) == 1
    assert Summary.objects.get(session=session).content == "old"

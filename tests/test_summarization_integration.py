"""Summarization end to end: PostgreSQL, Redis, real Celery worker processes
and the fake model server in its own process.

Concurrent writers and workers on one session, a failing model, a worker
child killed in the middle of a model call, and a broker outage.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter

import pytest
from django.db import connections

from sessions_app.models import ChatSession, Episode
from sessions_app.services import episode_create
from summaries import selectors, tasks, triggers
from summaries.models import SummarizationState, Summary
from summaries.prompts import parse_exchanges
from tests.factories import ChatSessionFactory
from tests.fake_model_server import reply_text
from tests.integration_support import (  # noqa: F401 - fixtures
    live_database,
    own_redis,
    redis_url,
    wait_until,
    worker_fleet,
)

pytestmark = [pytest.mark.integration]

RESPONSE = (
    "The assistant answers with a paragraph of plain explanation that is long enough to count, "
    "then adds one example, a caveat about the edge cases, and a closing remark that invites the "
    "next question."
)


def write_episodes(session: ChatSession, count: int, *, tag: str) -> list[Episode]:
    """``count`` episodes; five of them pass the token threshold, so the gate fires."""
    episodes = [
        episode_create(session=session, user_input=f"Question {tag}-{i}: what next?", response=RESPONSE)
        for i in range(count)
    ]
    return episodes


def model_prompts(server) -> list[str]:
    return [
        r["body"]["messages"][0]["content"]
        for r in server.requests
        if r["path"] == "/api/chat" and isinstance(r.get("body"), dict)
    ]


def covered_inputs(prompts: list[str]) -> Counter[str]:
    """How often each episode's question was sent to the model as new text."""
    return Counter(user for prompt in prompts for user, _ in parse_exchanges(prompt))


def assert_chain_tiles(session: ChatSession) -> list[Summary]:
    """Every episode covered exactly once, rows in order, no overlap, no gap."""
    rows = list(Summary.objects.chain(session.pk))
    ids = list(Episode.objects.for_session(session.pk).values_list("pk", flat=True))
    assert rows, "no summary rows"
    assert rows[0].first_episode_id == ids[0]
    for before, after in zip(rows, rows[1:]):
        between = [pk for pk in ids if before.last_episode_id < pk < after.first_episode_id]
        assert before.last_episode_id < after.first_episode_id and not between, (before, after)
    assert rows[-1].last_episode_id == ids[-1]
    return rows


def state(session: ChatSession) -> SummarizationState | None:
    return SummarizationState.objects.filter(session=session).first()


def settled(session: ChatSession) -> bool:
    st = state(session)
    gate = selectors.session_gate(session.pk)
    return st is not None and st.state in ("idle", "failed") and gate is not None and not gate.fires


def finish(session: ChatSession, fleet, *, timeout: float = 60) -> None:
    """Drain, then force one run for the last few episodes the gate leaves
    for later, and wait until the chain reaches the last episode."""
    fleet.wait_drained(timeout=timeout, until=lambda: settled(session))
    last_id = Episode.objects.for_session(session.pk).last().pk
    if selectors.covered_through(session.pk) < last_id:
        assert triggers.request_run_now(session_pk=session.pk, force=True)
        wait_until(
            lambda: selectors.covered_through(session.pk) == last_id and state(session).state == "idle",
            timeout=timeout,
            message=f"the forced run to finish\n{fleet.logs()}",
        )


def test_concurrent_writers_and_workers_on_one_session(worker_fleet, fake_model_process, owner):
    fleet = worker_fleet(4, model_url=fake_model_process.url)
    session = ChatSessionFactory(owner=owner)
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            write_episodes(session, 50, tag=f"w{n}")
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    # Each writer holds a connection of the process's pool (8) until it is done:
    # this thread's goes back first, or the last writer waits for one and, on
    # a loaded machine, gives up after the pool's timeout.
    connections.close_all()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors

    finish(session, fleet, timeout=90)

    assert Episode.objects.filter(session=session).count() == 400
    rows = assert_chain_tiles(session)
    prompts = model_prompts(fake_model_process)
    sent = covered_inputs(prompts)
    all_inputs = set(Episode.objects.filter(session=session).values_list("user_input", flat=True))
    assert set(sent) == all_inputs  # every episode reached the model
    assert max(sent.values()) == 1, [k for k, v in sent.items() if v > 1][:5]  # and only once
    answers = {reply_text(p) for p in prompts}
    assert all(row.content in answers for row in rows)
    assert state(session).state == "idle"


def test_failing_model_never_breaks_writes_and_summaries_catch_up(
    worker_fleet, fake_model_process, owner, settings
):
    settings.SUMMARY_RETRY_AFTER_SECONDS = 0  # this process re-enqueues failed sessions at once
    fleet = worker_fleet(2, model_url=fake_model_process.url)
    session = ChatSessionFactory(owner=owner)
    write_episodes(session, 5, tag="ok")
    wait_until(
        lambda: Summary.objects.filter(session=session).exists(), message=f"first summary\n{fleet.logs()}"
    )
    wait_until(lambda: state(session).state == "idle", message="idle after the first summary")

    steps = [
        ("http_500", {}),
        ("slow", {"slow_seconds": 5}),  # workers time out after 2 s
        ("refused", {}),
        ("malformed_json", {}),
        ("empty_content", {}),
    ]
    earlier_ok: set[str] = set()  # a restarted fake server forgets what it saw

    def ok_answers() -> set[str]:
        """Replies the fake server actually gave: the only texts allowed in a row."""
        return earlier_ok | {
            reply_text(r["body"]["messages"][0]["content"])
            for r in fake_model_process.requests
            if r["path"] == "/api/chat" and r.get("mode") == "ok"
        }

    def assert_nothing_bad_stored() -> None:
        allowed = ok_answers()
        for row in Summary.objects.filter(session=session):
            assert row.content in allowed, f"row {row.episode_range} holds {row.content!r}"

    for n, (mode, options) in enumerate(steps):
        started = time.time()
        if mode == "refused":
            earlier_ok |= ok_answers()
            fake_model_process.stop()
        else:
            fake_model_process.set_mode(mode, **options)
        written = write_episodes(session, 5, tag=f"{mode}{n}")
        assert all(e.pk for e in written)  # every write succeeded
        wait_until(
            lambda started=started: (
                (st := state(session)).state == "failed"
                and st.failed_at
                and st.failed_at.timestamp() >= started
            ),
            timeout=30,
            message=f"state failed after {mode}\n{fleet.logs()}",
        )
        assert state(session).last_error
        if mode == "refused":
            fake_model_process.restart()
        assert_nothing_bad_stored()

    fake_model_process.set_mode("ok")
    assert Episode.objects.filter(session=session).count() == 30
    tasks.sweep_pending()
    finish(session, fleet, timeout=60)

    rows = assert_chain_tiles(session)
    assert_nothing_bad_stored()
    assert all(row.content.startswith("Summary of ") for row in rows)
    assert state(session).state == "idle" and state(session).last_error == ""


def test_worker_child_killed_during_a_model_call_redoes_the_work_once(
    worker_fleet, fake_model_process, owner
):
    fleet = worker_fleet(2, model_url=fake_model_process.url, INFERENCE_TIMEOUT_SECONDS="30")
    session = ChatSessionFactory(owner=owner)
    fake_model_process.set_mode("slow", slow_seconds=20)
    write_episodes(session, 5, tag="k")

    (first,) = fake_model_process.wait_for_requests(1, timeout=30)
    # The child whose worker received the task is the one waiting on the model.
    busy = [w for w in fleet.workers if "summarize_session" in w.log() and "received" in w.log()]
    assert len(busy) == 1, fleet.logs()
    (child,) = busy[0].children()
    fake_model_process.set_mode("ok")  # the redelivered task gets its answer at once
    os.kill(child, signal.SIGKILL)

    wait_until(
        lambda: Summary.objects.filter(session=session).exists() and state(session).state == "idle",
        timeout=60,
        message=f"the redelivered task to finish\n{fleet.logs()}",
    )
    time.sleep(1)  # room for a wrong second delivery to show itself
    assert Summary.objects.filter(session=session).count() == 1
    prompts = model_prompts(fake_model_process)
    assert prompts.count(first["body"]["messages"][0]["content"]) == 2  # the call, then the redo
    assert len(prompts) == 2
    assert_chain_tiles(session)


def test_broker_outage_never_fails_writes_and_the_sweep_catches_up(
    worker_fleet, fake_model_process, own_redis, owner
):
    fleet = worker_fleet(2, model_url=fake_model_process.url, broker_url=own_redis.url)
    session = ChatSessionFactory(owner=owner)
    write_episodes(session, 5, tag="before")
    wait_until(
        lambda: Summary.objects.filter(session=session).exists(), message=f"first summary\n{fleet.logs()}"
    )
    wait_until(lambda: state(session).state == "idle", message="idle")

    own_redis.stop()
    written = write_episodes(session, 12, tag="outage")
    assert len(written) == 12 and Episode.objects.filter(session=session).count() == 17
    assert state(session).state == "idle"  # the failed enqueue left it for the sweep
    assert selectors.sessions_with_pending_work() == [session.pk]

    own_redis.start()
    wait_until(lambda: tasks.sweep_pending() == [session.pk], timeout=20, message="the sweep to enqueue")
    finish(session, fleet, timeout=60)
    assert_chain_tiles(session)

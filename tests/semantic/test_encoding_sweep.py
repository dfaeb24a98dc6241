"""Vectors come back after a lost encoding task: the sweep (beat's, the
embedded worker's, ``summarize_pending``) finds the sessions with episodes
past their vectors' reach, by an index, and sends the task again; nothing
for a task still on its way, nothing with retrieval by meaning off. Rows
written before passages covered the whole text are encoded again by it."""

from __future__ import annotations

import io
from datetime import timedelta

import numpy as np
import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from nexus import embedded_worker
from nexus.celery import start_embedded_worker
from sessions_app.models import ChatSession, EpisodeVector
from sessions_app.semantic import embed_pending, encode_again, tasks
from sessions_app.semantic.backlog import resend_missing, sessions_behind
from sessions_app.services import episode_create, episodes_bulk_create
from summaries.tasks import sweep_pending_summaries
from tests.factories import ChatSessionFactory
from tests.process_support import wait_until

pytestmark = pytest.mark.django_db

#: A recent window's worth of exchanges (CONTEXT_RECENT_EPISODES's default).
WINDOW = 8


class Broker:
    """What becomes of the encoding tasks sent: ``lost`` drops them (a
    worker killed, a broker restarted empty), ``down`` refuses them, else
    they run here as without a broker. ``sent`` lists the sessions."""

    def __init__(self) -> None:
        self.sent: list[int] = []
        self.refused = 0
        self.lost = False
        self.down = False

    def __call__(self, task, kwargs) -> None:
        if self.down:
            self.refused += 1
            raise ConnectionError("broker unreachable")
        self.sent.append(kwargs["session_pk"])
        if not self.lost:
            task.apply(kwargs=kwargs)


@pytest.fixture(autouse=True)
def _no_summaries(settings):
    """Summarization never due here, so the sweep's count is the encoding's alone."""
    settings.SUMMARY_THRESHOLD_TOKENS = 10**9


@pytest.fixture
def broker(monkeypatch) -> Broker:
    fake = Broker()
    monkeypatch.setattr(tasks, "dispatch", fake)
    return fake


def items(count: int) -> list[dict[str, str]]:
    return [
        {"user_input": f"Question {n} about the garden?", "response": f"Answer {n}."} for n in range(count)
    ]


def write_singly(session, count: int, capture) -> None:
    for n in range(count):
        with capture(execute=True):
            episode_create(session=session, user_input=f"Single {n} about the lake?", response="Yes.")


def quiet(session) -> None:
    """As if nothing had moved in the session for longer than a task may take
    (``SUMMARY_QUEUED_STALE_SECONDS``): no write, no encoding, no send."""
    then = timezone.now() - timedelta(seconds=settings.SUMMARY_QUEUED_STALE_SECONDS + 1)
    ChatSession.objects.filter(pk=session.pk).update(updated_at=then, encoding_activity_at=then)


def missing(session) -> int:
    return session.episodes.count() - EpisodeVector.objects.filter(session=session).count()


def test_a_session_whose_task_was_lost_gets_its_vectors_after_a_sweep(
    semantic, session, broker, django_capture_on_commit_callbacks
):
    broker.lost = True
    with django_capture_on_commit_callbacks(execute=True):
        episodes_bulk_create(session=session, items=items(3 * WINDOW))
    write_singly(session, 2, django_capture_on_commit_callbacks)
    assert broker.sent == [session.pk] * 3 and missing(session) == 3 * WINDOW + 2
    broker.lost = False
    # Written a moment ago, its task may still be on its way: not doubled.
    assert sweep_pending_summaries.apply().get() == 0
    quiet(session)
    assert sweep_pending_summaries.apply().get() == 1
    assert broker.sent == [session.pk] * 4
    assert missing(session) == 0
    session.refresh_from_db()
    assert session.encoded_through_position == session.cached_last_position == 3 * WINDOW + 2
    # Caught up: the next sweeps send nothing.
    quiet(session)
    assert resend_missing() == []


def test_nothing_is_sent_for_sessions_with_nothing_missing_and_one_lost_write_is(
    semantic, owner, broker, django_capture_on_commit_callbacks
):
    encoded = ChatSessionFactory(owner=owner)
    with django_capture_on_commit_callbacks(execute=True):
        episodes_bulk_create(session=encoded, items=items(30))
    # Single writes: each sends the task, so none is left behind.
    singly = ChatSessionFactory(owner=owner)
    write_singly(singly, WINDOW + 3, django_capture_on_commit_callbacks)
    # One write whose task was lost: its episode may leave the window at the next write.
    lost_one = ChatSessionFactory(owner=owner)
    write_singly(lost_one, WINDOW, django_capture_on_commit_callbacks)
    broker.lost = True
    write_singly(lost_one, 1, django_capture_on_commit_callbacks)
    broker.lost = False
    empty = ChatSessionFactory(owner=owner)
    assert missing(encoded) == missing(singly) == 0 and missing(lost_one) == 1
    for each in (encoded, singly, lost_one, empty):
        quiet(each)
    assert resend_missing() == [lost_one.pk]
    assert missing(lost_one) == 0
    quiet(lost_one)
    assert resend_missing() == []


def test_a_task_the_sweep_sent_is_given_time_before_it_is_sent_again(
    semantic, session, broker, django_capture_on_commit_callbacks
):
    broker.lost = True
    with django_capture_on_commit_callbacks(execute=True):
        episodes_bulk_create(session=session, items=items(20))
    ChatSession.objects.filter(pk=session.pk).update(updated_at=timezone.now() - timedelta(hours=1))
    assert resend_missing() == [session.pk]  # lost again
    assert resend_missing() == []
    quiet(session)
    broker.lost = False
    assert resend_missing() == [session.pk]
    assert missing(session) == 0


def test_a_send_the_broker_refused_is_tried_again_at_the_next_sweep(
    semantic, owner, broker, django_capture_on_commit_callbacks
):
    broker.down = True
    behind = [ChatSessionFactory(owner=owner) for _ in range(2)]
    for session in behind:
        with django_capture_on_commit_callbacks(execute=True):
            episodes_bulk_create(session=session, items=items(20))
        quiet(session)
    refused_at_write = broker.refused
    assert resend_missing() == []
    assert broker.refused == refused_at_write + 1  # the first refusal ends the pass
    broker.down = False
    assert sorted(resend_missing()) == sorted(s.pk for s in behind)
    assert [missing(session) for session in behind] == [0, 0]


def test_nothing_is_sent_with_retrieval_by_meaning_off(session, broker):
    episodes_bulk_create(session=session, items=items(20))
    quiet(session)
    assert sessions_behind(now=timezone.now()) == [session.pk]
    assert resend_missing() == [] and broker.sent == []
    assert not EpisodeVector.objects.exists()


def test_the_counter_follows_the_vectors_written(semantic, session):
    episodes = episodes_bulk_create(session=session, items=items(5))
    embed_pending(session.pk, limit=3)
    session.refresh_from_db()
    assert session.encoded_through_position == episodes[2].position
    embed_pending(session.pk)
    embed_pending(session.pk)  # nothing missing: the counter stays
    session.refresh_from_db()
    assert session.encoded_through_position == episodes[-1].position
    assert session.encoding_activity_at is not None
    assert encode_again(session.pk) == 5
    session.refresh_from_db()
    assert session.encoded_through_position == episodes[-1].position


def test_one_sweep_costs_two_queries_however_many_sessions_it_sends(semantic, owner, broker):
    broker.lost = True
    for _ in range(6):
        behind = ChatSessionFactory(owner=owner)
        episodes_bulk_create(session=behind, items=items(12))
        quiet(behind)
    with CaptureQueriesContext(connection) as ctx:
        assert len(resend_missing()) == 6
    assert len(ctx.captured_queries) == 2  # the sessions behind, then their mark


def test_the_sweep_reads_the_sessions_behind_by_their_index(owner):
    """30,000 sessions, 30 of them behind: the sweep reads a range of
    ``session_unencoded_idx``, never the table."""
    now = timezone.now()
    old = now - timedelta(days=1)
    ChatSession.objects.bulk_create(
        ChatSession(
            owner=owner,
            cached_episode_count=n % 50,
            cached_last_position=n % 50,
            encoded_through_position=0 if n % 1000 == 20 else n % 50,
        )
        for n in range(30_000)
    )
    ChatSession.objects.update(updated_at=old)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    with CaptureQueriesContext(connection) as ctx:
        assert len(sessions_behind(now=now, limit=100)) == 30
    (query,) = ctx.captured_queries
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"EXPLAIN {query['sql']}")
            plan = "\n".join(row[0] for row in cursor.fetchall())
            assert "Index Scan using session_unencoded_idx" in plan, plan
            assert "Seq Scan" not in plan, plan
        else:
            cursor.execute(f"EXPLAIN QUERY PLAN {query['sql']}")
            plan = "\n".join(row[-1] for row in cursor.fetchall())
            assert "SEARCH sessions_app_chatsession USING INDEX session_unencoded_idx" in plan, plan


def test_summarize_pending_sends_it_too(semantic, session, broker):
    broker.lost = True
    episodes_bulk_create(session=session, items=items(20))
    quiet(session)
    out = io.StringIO()
    call_command("summarize_pending", stdout=out)
    assert "Enqueued the encoding of 1 session(s) with episodes missing vectors." in out.getvalue()
    assert broker.sent == [session.pk]
    out = io.StringIO()
    call_command("summarize_pending", "--sync", stdout=out)  # sent a moment ago: left alone
    assert "encoding" not in out.getvalue().lower() and missing(session) == 20
    quiet(session)
    call_command("summarize_pending", "--sync", stdout=out)
    assert "Encoded 1 session(s)" in out.getvalue() and missing(session) == 0


@pytest.mark.django_db(transaction=True)
def test_the_embedded_worker_sends_it_again_when_it_starts(semantic, session, broker, monkeypatch):
    """A web process restarted: its worker's queue went with it; the
    worker's own sweep, at start, sends the task again, to that worker."""
    broker.lost = True
    episodes_bulk_create(session=session, items=items(20))
    quiet(session)
    monkeypatch.undo()  # the real dispatch: to the running worker
    assert start_embedded_worker()
    try:
        wait_until(lambda: missing(session) == 0, timeout=30, message="the sweep at start to encode it")
    finally:
        embedded_worker.worker.stop(timeout=10)


@pytest.mark.django_db(transaction=True)
def test_the_migration_measures_the_vectors_sessions_already_have(owner):
    executor = MigrationExecutor(connection)
    executor.migrate([("sessions_app", "0006_episode_position")])
    old = executor.loader.project_state([("sessions_app", "0006_episode_position")]).apps
    try:
        OldSession = old.get_model("sessions_app", "ChatSession")
        OldEpisode = old.get_model("sessions_app", "Episode")
        OldVector = old.get_model("sessions_app", "EpisodeVector")
        half = OldSession.objects.create(owner_id=owner.pk, title="half encoded")
        none = OldSession.objects.create(owner_id=owner.pk, title="never encoded")
        for session in (half, none):
            for position in range(1, 5):
                OldEpisode.objects.create(session=session, position=position, user_input="q", response="r")
            session.cached_last_position = 4
            session.save()
        for episode in OldEpisode.objects.filter(session=half, position__lte=2):
            OldVector.objects.create(episode_id=episode.pk, session=half, token_count=1, vector=b"")
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate([("sessions_app", "0008_episode_owner")])
        measured = executor.loader.project_state([("sessions_app", "0008_episode_owner")]).apps
        reach = dict(
            measured.get_model("sessions_app", "ChatSession").objects.values_list(
                "pk", "encoded_through_position"
            )
        )
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert (reach[half.pk], reach[none.pk]) == (2, 0)


@pytest.mark.django_db(transaction=True)
def test_rows_of_the_older_layout_are_encoded_again_by_the_sweep_and_read_meanwhile(semantic, owner, broker):
    """Rows written before passages covered the whole text (passages of the
    first 2,000 characters of each side, no spans): the migration sets the
    sessions' reach back to the start, the old rows are still compared
    meanwhile, and the sweep encodes them again with every passage and its span."""
    from sessions_app.semantic import closeness, question_vector
    from sessions_app.semantic.encoder import encoder
    from sessions_app.semantic.passages import older_layout, passage_spans
    from sessions_app.semantic.vectors import spans_of, to_matrix

    fact = "The staging database listens on port 6432 behind pgbouncer."
    filler = " ".join(f"Step {n}: run the tests again and compare the timings." for n in range(90))
    texts = [("How do I make the CI faster?", f"{filler} {fact}"), ("Lovely weather today.", "Enjoy it.")]
    executor = MigrationExecutor(connection)
    executor.migrate([("sessions_app", "0008_episode_owner")])
    old = executor.loader.project_state([("sessions_app", "0008_episode_owner")]).apps
    try:
        OldSession = old.get_model("sessions_app", "ChatSession")
        OldEpisode = old.get_model("sessions_app", "Episode")
        OldVector = old.get_model("sessions_app", "EpisodeVector")
        before = OldSession.objects.create(owner_id=owner.pk, title="encoded before", cached_last_position=2)
        for position, (user_input, response) in enumerate(texts, start=1):
            episode = OldEpisode.objects.create(
                session=before, owner_id=owner.pk, position=position, user_input=user_input, response=response
            )
            layout = older_layout(user_input, response)
            OldVector.objects.create(
                episode_id=episode.pk,
                session=before,
                token_count=9,
                # float16, as vectors were stored then (migration 0016 rewrites them)
                vector=encoder().encode(layout).astype("<f2").tobytes(),
            )
        OldSession.objects.filter(pk=before.pk).update(
            encoded_through_position=2, cached_episode_count=2, cached_last_episode_id=episode.pk
        )
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    session = ChatSession.objects.get(pk=before.pk)
    assert session.encoded_through_position == 0
    first = session.episodes.order_by("position").first()
    old_row = EpisodeVector.objects.get(episode_id=first.pk)
    assert len(spans_of(old_row.spans)) == 0 and len(to_matrix([old_row.vector])[0]) == 8
    # Read as they are meanwhile: both compared, passages and all.
    found = closeness(
        session_pk=session.pk,
        newest_episode_id=session.cached_last_episode_id,
        vector=question_vector("How do I speed up the CI?"),
        scan=10,
    )
    assert len(found.ids) == 2 and found.nearest(1)[0].episode_id == first.pk

    quiet(session)
    assert resend_missing() == [session.pk]
    session.refresh_from_db()
    assert session.encoded_through_position == 2
    row = EpisodeVector.objects.get(episode_id=first.pk)
    vectors, _ = to_matrix([row.vector])
    spans = spans_of(row.spans)
    user_input, response = texts[0]
    assert len(vectors) == len(spans) + 1 == 1 + len(passage_spans(user_input)) + len(passage_spans(response))
    whole = user_input + response
    assert fact in whole[spans[-1][0] : spans[-1][1]]
    np.testing.assert_allclose(
        vectors[0], to_matrix([old_row.vector])[0][0], atol=2e-3
    )  # the same whole vector
    quiet(session)
    assert resend_missing() == []

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from sessions_app.models import ChatSession, Episode
from sessions_app.search import rank_session
from sessions_app.search.results import search_visible
from sessions_app.search.schema import FTS
from sessions_app.services import episode_create
from summaries.models import Summary


@pytest.mark.django_db
def test_models_and_migrations_agree():
    out = StringIO()
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=out, stderr=out)
    except SystemExit as exc:  # makemigrations --check exits 1 when a migration is missing
        pytest.fail(f"Missing migrations (exit {exc.code}):\n{out.getvalue()}")


# --- positions (sessions_app 0006, summaries 0007) -----------------------------

BEFORE_POSITIONS = [("sessions_app", "0005_episode_vector"), ("summaries", "0006_model_call_cap")]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def _latest():
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


def _sqlite_triggers() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        return {name for (name,) in cursor.fetchall()}


@pytest.mark.django_db(transaction=True)
def test_positions_are_filled_by_id_per_session_and_search_still_indexes_new_writes():
    old = _migrate(BEFORE_POSITIONS)
    try:
        if connection.vendor == "sqlite":  # reversed, the migration rebuilt the table and restored them
            assert {f"{FTS}_insert", f"{FTS}_delete", f"{FTS}_update"} <= _sqlite_triggers()
        user = old.get_model("auth", "User").objects.create(username="migrated")
        OldSession = old.get_model("sessions_app", "ChatSession")
        OldEpisode = old.get_model("sessions_app", "Episode")
        a = OldSession.objects.create(owner=user, title="Trip planning")
        b = OldSession.objects.create(owner=user, title="Other")
        empty = OldSession.objects.create(owner=user, title="Empty")
        # Interleaved ids: a1 b1 a2 a3 b2 a4; a3 was deleted before positions existed.
        made = [
            OldEpisode.objects.create(session=s, user_input=f"{s.title} {n}", response="r", token_count=2)
            for n, s in enumerate([a, b, a, a, b, a])
        ]
        made[3].delete()
        row = old.get_model("summaries", "Summary").objects.create(
            session=a, content="c", first_episode_id=made[2].pk, last_episode_id=made[5].pk
        )
        old.get_model("summaries", "SummaryRevision").objects.create(
            summary=row, source="automatic", content="before", first_episode_id=made[0].pk,
            last_episode_id=made[2].pk,
        )  # fmt: skip
    finally:
        _migrate(_latest())

    by_id = dict(Episode.objects.order_by().values_list("pk", "position"))
    # Numbered by id among the rows that exist (row_number per session).
    assert [by_id[e.pk] for e in (made[0], made[2], made[5])] == [1, 2, 3]
    assert [by_id[e.pk] for e in (made[1], made[4])] == [1, 2]
    last = dict(ChatSession.objects.values_list("pk", "cached_last_position"))
    assert (last[a.pk], last[b.pk], last[empty.pk]) == (3, 2, 0)
    summary = Summary.objects.select_related("session").get(pk=row.pk)
    assert (summary.first_position, summary.last_position) == (2, 3)
    assert str(summary) == "Exchanges 2–3 of “Trip planning”"
    revision = summary.revisions.get()
    assert (revision.first_position, revision.last_position) == (1, 2)

    # The counter goes on from the numbers given, and the full-text index
    # still takes new writes (on SQLite the rebuilt table needed its triggers back).
    session = ChatSession.objects.get(pk=a.pk)
    written = episode_create(session=session, user_input="the zanzibar ferry leaves at nine", response="ok")
    assert written.position == 4
    session.refresh_from_db()
    hits = rank_session(
        session_pk=session.pk,
        episode_count=session.cached_episode_count,
        total_tokens=session.cached_total_tokens,
        text="zanzibar",
        limit=5,
    )
    assert [hit.episode_id for hit in hits] == [written.pk]
    if connection.vendor == "sqlite":
        assert {f"{FTS}_insert", f"{FTS}_delete", f"{FTS}_update"} <= _sqlite_triggers()


# --- owners on episodes (sessions_app 0008) ------------------------------------

BEFORE_OWNERS = [("sessions_app", "0007_encoding_progress")]


@pytest.mark.django_db(transaction=True)
def test_episodes_are_given_their_sessions_owner_and_searched_across_sessions_by_it():
    old = _migrate(BEFORE_OWNERS)
    try:
        User = old.get_model("auth", "User")
        OldSession = old.get_model("sessions_app", "ChatSession")
        OldEpisode = old.get_model("sessions_app", "Episode")
        ann, bob = User.objects.create(username="ann"), User.objects.create(username="bob")
        made = {}
        for user, title in [(ann, "first"), (bob, "theirs"), (ann, "second")]:
            s = OldSession.objects.create(
                owner=user, title=title, cached_episode_count=1, cached_total_tokens=5, cached_last_position=1
            )
            made[title] = OldEpisode.objects.create(
                session=s, position=1, user_input=f"The zanzibar ferry, {title}", response="ok", token_count=5
            )
    finally:
        _migrate(_latest())

    owners = dict(Episode.objects.values_list("pk", "owner_id"))
    assert owners == {made["first"].pk: ann.pk, made["second"].pk: ann.pk, made["theirs"].pk: bob.pk}
    ann, bob = get_user_model().objects.get(pk=ann.pk), get_user_model().objects.get(pk=bob.pk)
    found = [hit.episode.pk for hit in search_visible(user=ann, text="zanzibar", limit=10)]
    assert sorted(found) == sorted([made["first"].pk, made["second"].pk])
    theirs = ChatSession.objects.get(title="theirs")
    written = episode_create(session=theirs, user_input="zanzibar again", response="")
    assert written.owner_id == bob.pk
    assert written.pk in [hit.episode.pk for hit in search_visible(user=bob, text="zanzibar", limit=10)]
    with connection.cursor() as cursor:
        described = connection.introspection.get_table_description(cursor, "sessions_app_episode")
    assert not next(column for column in described if column.name == "owner_id").null_ok
    if connection.vendor == "sqlite":
        assert {f"{FTS}_insert", f"{FTS}_delete", f"{FTS}_update"} <= _sqlite_triggers()
    else:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT indexrelid::regclass::text, indisvalid FROM pg_index"
                " WHERE indrelid = 'sessions_app_episode'::regclass"
            )
            indexes = dict(cursor.fetchall())
            cursor.execute("SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'episode_owner%'")
            (triggers,) = cursor.fetchone()
        assert indexes["episode_owner_search_idx"] and indexes["episode_owner_id_idx"]
        assert "episode_search_idx" not in indexes  # replaced
        assert triggers == 0  # the fill for older writers is gone with the migration


# --- whose memory (sessions_app 0012) -------------------------------------------

BEFORE_SCOPE = [("sessions_app", "0011_episode_vector_spans")]


@pytest.mark.django_db(transaction=True)
def test_sessions_made_for_an_openai_user_become_that_end_users_shared_memory():
    old = _migrate(BEFORE_SCOPE)
    try:
        user = old.get_model("auth", "User").objects.create(username="scoped")
        OldSession = old.get_model("sessions_app", "ChatSession")
        plain = OldSession.objects.create(owner=user, title="Plain", metadata={"topic": "x"})
        alice = OldSession.objects.create(owner=user, title="For alice", metadata={"openai_user": "alice"})
        too_long = OldSession.objects.create(owner=user, title="Long", metadata={"openai_user": "u" * 256})
    finally:
        _migrate(_latest())

    rows = {
        row["pk"]: (row["end_user"], row["memory_scope"])
        for row in ChatSession.objects.values("pk", "end_user", "memory_scope")
    }
    assert rows[plain.pk] == ("", "session")
    assert rows[alice.pk] == ("alice", "shared")
    # Never cut to a prefix another end user could share.
    assert rows[too_long.pk] == ("", "session")


# --- history fingerprints (sessions_app 0014) ------------------------------------

BEFORE_FINGERPRINTS = [("sessions_app", "0013_session_history_revision")]


@pytest.mark.django_db(transaction=True)
def test_sessions_the_openai_endpoint_made_get_the_fingerprint_of_their_history():
    from sessions_app.history_fingerprint import history_fingerprint

    old = _migrate(BEFORE_FINGERPRINTS)
    try:
        user = old.get_model("auth", "User").objects.create(username="fingerprinted")
        OldSession = old.get_model("sessions_app", "ChatSession")
        OldEpisode = old.get_model("sessions_app", "Episode")
        per_call = OldSession.objects.create(owner=user, title="OpenAI client conversation")
        per_user = OldSession.objects.create(
            owner=user, title="OpenAI user ann", metadata={"openai_user": "ann"}
        )
        plain = OldSession.objects.create(owner=user, title="Trip planning")
        pairs = [("My dog is Rex.", "Nice dog."), ("How old is he?", "Four.")]
        for session in (per_call, per_user, plain):
            # Written out of position order: the fingerprint follows positions.
            for position, (question, answer) in reversed(list(enumerate(pairs, 1))):
                OldEpisode.objects.create(
                    session=session, owner=user, position=position, user_input=question, response=answer
                )
        empty = OldSession.objects.create(owner=user, title="OpenAI client conversation")
    finally:
        _migrate(_latest())

    kept = dict(ChatSession.objects.values_list("pk", "history_fingerprint"))
    assert kept[per_call.pk] == kept[per_user.pk] == history_fingerprint(pairs)
    assert kept[empty.pk] == history_fingerprint([]) == ""
    assert kept[plain.pk] is None

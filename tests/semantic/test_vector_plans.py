"""On PostgreSQL, reading a session's vectors touches only that session's rows,
whatever lies around it (the layout of tests/test_read_plans.py)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from sessions_app.semantic import question_vector
from sessions_app.semantic.neighbours import closeness, forget
from sessions_app.semantic.store import embed_pending
from sessions_app.semantic.vectors import VECTOR_BYTES
from tests.factories import ChatSessionFactory

pytestmark = pytest.mark.django_db

LARGE = 12_000
TABLE = "sessions_app_episodevector"
#: How the candidates' rows are asked for: their ids, one array parameter (nexus.binary_rows).
BY_IDS = '"episode_id" = ANY($1::bigint[])'


def _fill(session, n: int) -> None:
    """``n`` episodes of a new session and their (zero) vectors, in two statements, encoded through its last."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH new AS (
                INSERT INTO sessions_app_episode
                       (session_id, owner_id, position, user_input, response, token_count,
                        created_at, metadata)
                SELECT %s, %s, g, 'About the garden ' || g, 'Noted ' || g, 12, now(), '{}'
                  FROM generate_series(1, %s) g
                RETURNING id
            )
            INSERT INTO sessions_app_episodevector (episode_id, session_id, token_count, vector)
            SELECT id, %s, 12, decode(repeat('00', %s), 'hex') FROM new
            """,
            [session.pk, session.owner_id, n, session.pk, VECTOR_BYTES],
        )
        cursor.execute(
            "UPDATE sessions_app_chatsession SET cached_episode_count = %s, cached_last_position = %s, "
            "encoded_through_position = %s, "
            "cached_last_episode_id = (SELECT max(id) FROM sessions_app_episode WHERE session_id = %s) WHERE id = %s",
            [n, n, n, session.pk, session.pk],
        )
    session.refresh_from_db()


@pytest.fixture
def layout(owner, other_user):
    if connection.vendor != "postgresql":
        pytest.skip("about PostgreSQL's planner")
    large = ChatSessionFactory(owner=owner, title="large old")
    _fill(large, LARGE)
    small = ChatSessionFactory(owner=owner, title="small")
    _fill(small, 10)
    newer = ChatSessionFactory(owner=other_user, title="large new")
    _fill(newer, LARGE)
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {TABLE}")
    return small, large


def _bad_nodes(sql: str, params) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
        plan = cursor.fetchone()[0]
    bad, stack = [], [plan[0]["Plan"]]
    while stack:
        node = stack.pop()
        stack.extend(node.get("Plans", []))
        if node.get("Relation Name") == TABLE and (
            node["Node Type"] == "Seq Scan" or node.get("Index Name") == f"{TABLE}_pkey"
        ):
            bad.append(f"{node['Node Type']} {node.get('Index Name', '')}")
    return bad


def test_the_nearest_and_the_newest_vector_read_only_the_sessions_rows(layout):
    vector = question_vector("the garden")
    for session in layout:
        forget()
        with CaptureQueriesContext(connection) as ctx:
            closeness(session_pk=session.pk, newest_episode_id=session.cached_last_episode_id, vector=vector,
                      scan=5000).nearest(5)  # fmt: skip
            embed_pending(session.pk)  # nothing missing: one probe
        reads = [q["sql"] for q in ctx.captured_queries if TABLE in q["sql"]]
        # The whole exchange's vector of the newest episodes compared, then the
        # rows of the question's candidates by their ids (the primary key is
        # the index for that); the probe for what is missing reads the session's row.
        assert len(reads) == 2
        assert _bad_nodes(reads[0], None) == [], reads[0]
        assert BY_IDS in reads[1]


def test_a_second_question_reads_only_what_was_written_since(layout):
    _, large = layout
    vector = question_vector("the garden")
    closeness(session_pk=large.pk, newest_episode_id=large.cached_last_episode_id, vector=vector, scan=5000)
    with CaptureQueriesContext(connection) as ctx:
        found = closeness(session_pk=large.pk, newest_episode_id=large.cached_last_episode_id, vector=vector,
                          scan=5000).nearest(5)  # fmt: skip
    assert len(found) == 5
    # One probe for vectors above the newest kept one, which finds none; then
    # the rows of the question's candidates, by their ids.
    assert len(ctx.captured_queries) == 2 and BY_IDS in ctx.captured_queries[1]["sql"]
    # Read forward from the newest kept vector: backward, PostgreSQL walks the
    # session's whole range before it finds nothing newer.
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {ctx.captured_queries[0]['sql']}")
        plan = cursor.fetchone()[0][0]["Plan"]
    nodes, stack = [], [plan]
    while stack:
        node = stack.pop()
        stack.extend(node.get("Plans", []))
        nodes.append(node)
    scans = [n for n in nodes if n.get("Relation Name") == TABLE]
    # (On a table this small, with half its rows in this session, the planner
    # may read the table whole; on bench/read_scaling.py's it scans the
    # index forward and stops at once.)
    assert scans and not [n for n in scans if n.get("Scan Direction") == "Backward"]
    assert f"({large.pk}, {large.cached_last_episode_id})" in ctx.captured_queries[0]["sql"].replace("'", "")

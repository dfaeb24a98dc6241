"""Every read of a session answers from its own rows, whatever its neighbours hold.

On PostgreSQL, a table laid out the awkward way production grows: a large
session first, then a small one (old), then another large one (new, so its
rows sit above the small session's in id order). Each read endpoint is
called for the small and for the large session; every query it sends that
touches the episodes is EXPLAINed and must not scan the table nor walk the
primary key, which would pass other sessions' episodes; and each endpoint
sends as many queries for the large session as for the small one.
"""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from sessions_app.models import ChatSession, Episode
from tests.factories import ChatSessionFactory, SummaryFactory, UserFactory

pytestmark = pytest.mark.django_db

LARGE = 12_000


def _fill(session: ChatSession, n: int, word: str) -> None:
    """``n`` episodes of a new session in one statement; every one holds ``word`` and "memory"."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO sessions_app_episode
                   (session_id, owner_id, position, user_input, response, token_count, created_at, metadata)
            SELECT %s, %s, g, 'About ' || %s || ' and memory, number ' || g, 'Noted ' || g || ' for ' || %s,
                   12, %s, '{}'
              FROM generate_series(1, %s) AS g
            """,
            [session.pk, session.owner_id, word, word, timezone.now(), n],
        )
        cursor.execute(
            """
            UPDATE sessions_app_chatsession s
               SET cached_episode_count = e.n, cached_total_tokens = e.t,
                   cached_last_episode_id = e.last, cached_last_episode_at = %s, cached_last_position = e.n
              FROM (SELECT count(*) AS n, sum(token_count) AS t, max(id) AS last
                      FROM sessions_app_episode WHERE session_id = %s) e
             WHERE s.id = %s
            """,
            [timezone.now(), session.pk, session.pk],
        )
    session.refresh_from_db()


@pytest.fixture
def layout(owner, other_user):
    if connection.vendor != "postgresql":
        pytest.skip("about PostgreSQL's planner")
    large = ChatSessionFactory(owner=owner, title="large old")
    _fill(large, LARGE, "garden")
    small = ChatSessionFactory(owner=owner, title="small")
    _fill(small, 10, "garden")
    newer = ChatSessionFactory(owner=other_user, title="large new")
    _fill(newer, LARGE, "garden")
    for session in (large, small):
        first, last = Episode.objects.for_session(session.pk).values_list("pk", flat=True)[:2]
        SummaryFactory(session=session, first_episode_id=first, last_episode_id=last)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE sessions_app_episode")
        cursor.execute("ANALYZE sessions_app_chatsession")
    return small, large


def read_paths(session: ChatSession) -> dict[str, str]:
    base = f"/api/sessions/{session.uuid}/"
    return {
        "detail": base,
        "episode-stats": f"{base}episode-stats/",
        "episodes": f"{base}episodes/",
        "since": f"{base}episodes/since/{session.cached_last_episode_id - 5}/",
        "summaries": f"{base}summaries/",
        "summary-status": f"{base}summary-status/",
        "context": f"{base}context/?question=What+about+the+garden+and+memory%3F",
        "search": f"{base}search/?q=garden+memory",
        "chat page": reverse("session-chat", args=[session.uuid]),
        "delete page": reverse("session-delete", args=[session.uuid]),
    }


def plans_touching_episodes(queries: list[dict]) -> list[str]:
    plans = []
    for query in queries:
        sql = query["sql"]
        if "sessions_app_episode" not in sql or not sql.lstrip().upper().startswith(("SELECT", "WITH")):
            continue
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}")
            plans.append(json.dumps(cursor.fetchone()[0]))
    return plans


def _by_ids(condition: str | None) -> bool:
    return bool(condition) and ("id = ANY" in condition or condition.startswith("(id = "))


def scans_of_other_rows(plan: str) -> list[str]:
    """Plan nodes that would read episodes of other sessions: a sequential
    scan of the table, or a walk of its primary key (looking rows up by
    their ids, ``id = ANY(...)``, reads only those rows)."""
    nodes = []
    stack = [json.loads(plan)[0]["Plan"]]
    while stack:
        node = stack.pop()
        stack.extend(node.get("Plans", []))
        if node.get("Relation Name") != "sessions_app_episode":
            continue
        walks_key = node.get("Index Name") == "sessions_app_episode_pkey" and not _by_ids(node.get("Index Cond"))
        if node["Node Type"] == "Seq Scan" or walks_key:
            nodes.append(f'{node["Node Type"]} {node.get("Index Name", "")}')
    return nodes


READS = [
    "detail", "episode-stats", "episodes", "since", "summaries", "summary-status", "context", "search",
    "chat page", "delete page",
]  # fmt: skip


@pytest.mark.parametrize("name", READS)
def test_a_read_touches_only_its_own_sessions_episodes(client, api_client, owner, layout, name):
    small, large = layout
    client.force_login(owner)
    http = client if name.endswith("page") else api_client
    counts = {}
    for session in (small, large):
        with CaptureQueriesContext(connection) as ctx:
            response = http.get(read_paths(session)[name])
        assert response.status_code == 200, response.content[:300]
        for plan in plans_touching_episodes(ctx.captured_queries):
            assert scans_of_other_rows(plan) == [], plan
        counts[session.title] = len(ctx.captured_queries)
    # Beyond the window a search reads, it looks rare terms up in the index: one query more at most.
    allowed = 1 if name in ("search", "context") else 0
    if name == "context":
        # A session short enough to be sent whole reads its history once (summaries.context.whole).
        assert counts["small"] <= counts["large old"] + 1
        counts["small"] = min(counts["small"], counts["large old"])
    assert counts["small"] <= counts["large old"] <= counts["small"] + allowed


def test_the_session_list_reads_no_episodes(api_client, layout):
    with CaptureQueriesContext(connection) as ctx:
        response = api_client.get("/api/sessions/")
    assert response.status_code == 200
    assert {row["title"] for row in response.json()["results"]} == {"small", "large old"}
    assert not [q for q in ctx.captured_queries if "sessions_app_episode" in q["sql"]]


def test_the_layout_is_awkward_enough_to_matter(layout):
    """The check above can fail: on this table, the plain shape of "the large
    old session's last eight episodes" walks the primary key past the new
    session's rows, which is what the reads avoid."""
    _, large = layout
    naive = Episode.objects.filter(session_id=large.pk).order_by("-pk")[:8]
    with connection.cursor() as cursor:
        sql, params = naive.query.sql_with_params()
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
        plan = json.dumps(cursor.fetchone()[0])
    assert scans_of_other_rows(plan) != []


# --- the search across sessions ---------------------------------------------------

RARE = "garden 1234"  # 1234 is in no newest episode of the owner's: looked up in the index


def plan_nodes(plan: str) -> list[dict]:
    nodes, stack = [], [json.loads(plan)[0]["Plan"]]
    while stack:
        node = stack.pop()
        stack.extend(node.get("Plans", []))
        nodes.append(node)
    return nodes


def across_queries(client) -> list[dict]:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get("/api/search/", {"q": RARE, "limit": 10})
    assert response.status_code == 200, response.content[:300]
    assert response.json()["results"]
    return ctx.captured_queries


def test_the_search_across_sessions_names_no_session_and_reads_the_owners_index(api_client, owner, layout):
    small, large = layout
    before = across_queries(api_client)
    for n in range(300):
        _fill(ChatSessionFactory(owner=owner, title=f"more {n}"), 1, "garden")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE sessions_app_episode")
    after = across_queries(api_client)
    # As many queries for 302 sessions as for 2, none of them carrying a list of sessions.
    assert len(after) == len(before)
    for query in after:
        assert "session_id = ANY" not in query["sql"] and "session_id IN" not in query["sql"], query["sql"]
    plans = plans_touching_episodes(after)
    for plan in plans:
        assert scans_of_other_rows(plan) == [], plan
    indexes = {node.get("Index Name") for plan in plans for node in plan_nodes(plan)}
    # The owner's newest episodes from (owner_id, id); the rare term from (owner, session, vector).
    assert {"episode_owner_id_idx", "episode_owner_search_idx"} <= indexes
    nodes = [node for plan in plans for node in plan_nodes(plan)]
    probes = [node for node in nodes if node.get("Index Name") == "episode_owner_search_idx"]
    assert probes and all("owner_id" in node["Index Cond"] for node in probes)


def test_staff_who_see_every_session_search_the_vector_alone(client, layout):
    staff = UserFactory(username="viewer", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="view_chatsession"))
    client.force_login(staff)
    queries = across_queries(client)
    plans = plans_touching_episodes(queries)
    nodes = [node for plan in plans for node in plan_nodes(plan)]
    episode_scans = [n for n in nodes if n.get("Relation Name") == "sessions_app_episode"]
    assert not [n for n in episode_scans if n["Node Type"] == "Seq Scan"]
    probes = [node for node in nodes if node.get("Index Name") == "episode_owner_search_idx"]
    assert probes and not [node for node in probes if "owner_id" in node["Index Cond"]]
    assert not [q for q in queries if "owner_id\" = " in q["sql"] or "session_id = ANY" in q["sql"]]

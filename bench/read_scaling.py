"""Does a read cost the same whatever the session's length and its neighbours?

The table is laid out the awkward way production grows (300,000+ episodes,
built through the bulk API under gunicorn with a broker set and no worker,
so nothing summarizes meanwhile), in this order:

1. user A's first 100,000-episode session (the *large* session),
2. user B's 10-episode session (the *small* session: old, under a large new one),
3. user D's ten 10-episode sessions,
4. user C's 100 sessions of 1,000 episodes,
5. eight 10-episode sessions of A,
6. A's second 100,000-episode session (large and new: its rows sit above
   every other session's in id order),
7. user E's 30,000 sessions of 2 episodes (the newest rows),

and the small and the first large session get a vector for every episode
(``give_vectors``), so the context's retrieval by meaning has all it can compare.

Then every read endpoint is timed over HTTP (keep-alive, token auth)
for the small and the large session, alternating request by request so the
machine's noise hits both alike: detail, episode-stats, the first episodes
page, since/{id} near the end, summaries, summary-status, context and
search (when the search endpoint exists). The context question and the
search words occur in every episode of both sessions, the worst case. The
session list is timed for A (ten sessions, two of them long) against D (ten
short ones). Prints both medians and the ratio for each read; the worst
ratio (goal: at most 1.3). Then the search across sessions (``/api/search/``)
of E (30,000 sessions) and of a staff member who may read every session,
each against D's (ten), and their worst ratio (goal: at most 1.5). Last, a
shared session's context for a person with 1,000 shared sessions of 100
episodes against one with 10 (``bench/shared_layout.py``; goal at most 1.5);
``--only-shared`` builds and times that row alone.

    .venv/bin/python bench/read_scaling.py [--runs 150] [--only-shared]

``BENCH_DATABASE_URL`` (default ``nexus_read_bench``; the layout is built once
and reused), ``BENCH_BROKER_URL`` (default Redis db 5).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

os.environ.setdefault("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/nexus_read_bench")

from bench.http_load import BENCH_BROKER_URL, gunicorn, post_json, setup_write_bench  # noqa: E402

setup_write_bench()

from django.contrib.auth import get_user_model  # noqa: E402
from django.contrib.auth.models import Permission  # noqa: E402
from django.db import connection  # noqa: E402
from rest_framework.authtoken.models import Token  # noqa: E402

from bench import shared_layout  # noqa: E402
from sessions_app.models import ChatSession  # noqa: E402

BATCH = 500
LARGE = 100_000
QUESTION = "How should the worker queue keep the memory of the session small?"
SEARCH = "worker queue memory"
#: A common word and a rare one: 7919 is in the second episode of each session of the layout
#: (``episode``'s note), so in one of E's 60,000 and none of the newest: looked up in the index.
RARE_SEARCH = "memory 7919"
#: User E's sessions and the episodes of each: the search across them is timed.
MANY = 30_000
MANY_SIZE = 2
TOPICS = ("deploys", "billing", "travel plans", "the garden", "a job offer", "the book club", "tax forms")


def episode(n: int) -> dict[str, str]:
    """One exchange; every one holds the words of QUESTION and SEARCH."""
    topic = TOPICS[n % len(TOPICS)]
    return {
        "user_input": f"Exchange {n} about {topic}: how big should the worker queue be to keep memory low?",
        "response": (
            f"For {topic}, keep the worker queue short and the session memory small: summarize older "
            f"exchanges, keep the recent ones in full. Note {n * 7919 % 100003} for later."
        ),
    }


def user_headers(username: str) -> dict[str, str]:
    user, _ = get_user_model().objects.get_or_create(username=username)
    token, _ = Token.objects.get_or_create(user=user)
    return {"Authorization": f"Token {token.key}"}


def staff_headers() -> dict[str, str]:
    """A staff member who may read every session (and so searches them all)."""
    user, _ = get_user_model().objects.get_or_create(username="bench-staff", defaults={"is_staff": True})
    user.user_permissions.add(Permission.objects.get(codename="view_chatsession"))
    return user_headers("bench-staff")


def layout() -> list[tuple[str, str, int]]:
    """(username, title, episodes) in creation order."""
    plan = [("bench-a", "A large old", LARGE), ("bench-b", "B small", 10)]
    plan += [("bench-d", f"D short {i}", 10) for i in range(10)]
    plan += [("bench-c", f"C medium {i}", 1_000) for i in range(100)]
    plan += [("bench-a", f"A short {i}", 10) for i in range(8)]
    plan += [("bench-a", "A large new", LARGE)]
    return plan


def build(port: int, *, many: bool = True) -> None:
    """Create the layout through the API, skipping sessions already complete
    (without E's 30,000 sessions when not ``many``)."""
    for username, title, size in layout():
        headers = user_headers(username)
        connection.close()
        session = ChatSession.objects.filter(owner__username=username, title=title).first()
        if session is not None and session.cached_episode_count == size:
            continue
        if session is not None:
            raise SystemExit(f"{title!r} is incomplete; drop the bench database and run again")
        status, payload = post_json(port, "/api/sessions/", {"title": title}, headers)
        assert status == 201, (status, payload)
        path = f"/api/sessions/{payload['id']}/episodes/"
        started = time.perf_counter()
        for first in range(0, size, BATCH):
            items = [episode(n) for n in range(first, min(size, first + BATCH))]
            status, answer = post_json(port, path, items, headers)
            assert status == 201, (status, str(answer)[:300])
        if size >= LARGE:
            print(f"built {title!r}: {size:,} episodes in {time.perf_counter() - started:.0f} s", flush=True)
    if many:
        build_many(port)
    for username, title in (("bench-a", "A large old"), ("bench-b", "B small")):
        give_vectors(ChatSession.objects.get(owner__username=username, title=title))
    with connection.cursor() as cursor:
        # The steady state autovacuum keeps (statistics, the search index's pending list merged).
        cursor.execute("VACUUM ANALYZE")
    _drop_queued_tasks()


def build_many(port: int) -> None:
    """User E's MANY sessions through the API, after the rest; a run cut off
    goes on where it stopped."""
    headers = user_headers("bench-e")
    owned = ChatSession.objects.filter(owner__username="bench-e")
    owned.exclude(cached_episode_count=MANY_SIZE).delete()  # one left half-made
    made = owned.count()
    connection.close()
    started = time.perf_counter()
    for n in range(made, MANY):
        status, payload = post_json(port, "/api/sessions/", {"title": f"E many {n}"}, headers)
        assert status == 201, (status, payload)
        items = [episode(n * MANY_SIZE + k) for k in range(MANY_SIZE)]
        status, answer = post_json(port, f"/api/sessions/{payload['id']}/episodes/", items, headers)
        assert status == 201, (status, str(answer)[:300])
    if made < MANY:
        print(f"built E's {MANY - made:,} sessions in {time.perf_counter() - started:.0f} s", flush=True)


def give_vectors(session: ChatSession) -> None:
    """Every episode of a timed session gets its vectors, as many as the
    encoding task would give it (sessions_app.semantic.passages). Random unit
    vectors, written directly: what finding the nearest costs does not depend
    on the values, and encoding 100,000 episodes would take this machine hours.
    What is quoted does: among the large session's vectors a few stand over the
    relevance floor by chance, among the small one's none (bench/README.md)."""
    import numpy as np

    from sessions_app.models import Episode, EpisodeVector
    from sessions_app.semantic.encoder import DIMENSIONS
    from sessions_app.semantic.passages import episode_texts
    from sessions_app.semantic.vectors import VECTOR_BYTES, to_bytes

    rows = Episode.objects.for_session(session.pk).values_list("pk", "token_count", "user_input", "response")
    newest = rows.last()
    stored = EpisodeVector.objects.filter(episode_id=newest[0]).values_list("vector", flat=True).first()
    expected = len(episode_texts(newest[2], newest[3])) * VECTOR_BYTES
    if (
        stored is not None
        and len(bytes(stored)) == expected
        and EpisodeVector.objects.filter(session=session).count() == session.cached_episode_count
    ):
        return
    EpisodeVector.objects.filter(session=session).delete()
    rng = np.random.default_rng(session.pk)
    batch: list[EpisodeVector] = []
    vectors = 0
    for pk, tokens, user_input, response in rows.iterator(chunk_size=5000):
        matrix = rng.standard_normal((len(episode_texts(user_input, response)), DIMENSIONS)).astype(
            np.float32
        )
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        vectors += len(matrix)
        batch.append(
            EpisodeVector(episode_id=pk, session=session, token_count=tokens, vector=to_bytes(matrix))
        )
        if len(batch) == 5000:
            EpisodeVector.objects.bulk_create(batch)
            batch = []
    EpisodeVector.objects.bulk_create(batch)
    print(
        f"vectors for {session.title!r}: {vectors:,} for {session.cached_episode_count:,} episodes",
        flush=True,
    )


def _drop_queued_tasks() -> None:
    """No worker runs here: the runs the writes enqueued would only pile up."""
    import redis

    redis.Redis.from_url(BENCH_BROKER_URL).flushdb()


def get(conn: http.client.HTTPConnection, path: str, headers: dict[str, str]) -> tuple[float, int, bytes]:
    start = time.perf_counter()
    conn.request("GET", path, headers=headers)
    response = conn.getresponse()
    body = response.read()
    return (time.perf_counter() - start) * 1000, response.status, body


def reads_for(conn: http.client.HTTPConnection, uuid: str, headers: dict[str, str]) -> dict[str, str]:
    """The read paths of one session. Pages hold as many rows for the small
    session as for the large one (10 episodes or search results; since/{id}
    starts 5 before the end),
    so the comparison is of the reads, not of how many rows they return. The
    context is read at the default budget, which the large session fills
    and the small one cannot (its prompt is smaller), and at a budget both fill."""
    base = f"/api/sessions/{uuid}/"
    _, _, body = get(conn, f"{base}episode-stats/", headers)
    last_id = json.loads(body)["last_episode_id"]
    paths = {
        "detail": base,
        "episode-stats": f"{base}episode-stats/",
        "episodes (first page)": f"{base}episodes/?page_size=10",
        "since/{id} near the end": f"{base}episodes/since/{last_id - 5}/",
        "summaries": f"{base}summaries/",
        "summary-status": f"{base}summary-status/",
        "context": f"{base}context/?" + urlencode({"question": QUESTION}),
        "context (budget 600)": f"{base}context/?" + urlencode({"question": QUESTION, "budget": 600}),
        "search": f"{base}search/?" + urlencode({"q": SEARCH, "limit": 10}),
    }
    _, status, _ = get(conn, paths["search"], headers)
    if status == 404:
        del paths["search"]  # no search endpoint yet
    return paths


def time_pairs(
    conn: http.client.HTTPConnection,
    cases: dict[str, tuple[tuple[str, dict], tuple[str, dict]]],
    args: argparse.Namespace,
    goal: float,
) -> None:
    """Time each case's two reads alternately; print both medians, the ratio, and the worst."""
    worst = ("", 0.0)
    for name, ((small_path, small_auth), (large_path, large_auth)) in cases.items():
        times: tuple[list[float], list[float]] = ([], [])
        for run in range(args.warmup + args.runs):
            pair = [(0, small_path, small_auth), (1, large_path, large_auth)]
            if run % 2:
                pair.reverse()
            for slot, path, auth in pair:
                took, status, body = get(conn, path, auth)
                if status != 200:
                    raise SystemExit(f"{path} answered {status}: {body[:300]!r}")
                if run >= args.warmup:
                    times[slot].append(took)
        small_ms, large_ms = statistics.median(times[0]), statistics.median(times[1])
        ratio = large_ms / small_ms
        if ratio > worst[1]:
            worst = (name, ratio)
        print(f"{name:<36} {small_ms:>9.2f} {large_ms:>9.2f} {ratio:>6.2f}", flush=True)
    print(f"worst ratio: {worst[1]:.2f} ({worst[0]}; goal <= {goal})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=150)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--only-shared", action="store_true", help="only the shared-memory row")
    parser.add_argument(
        "--one-session",
        action="store_true",
        help="only the reads of one session, without building E's 30,000 sessions (they never read them)",
    )
    args = parser.parse_args()
    if args.only_shared:
        with gunicorn() as port:
            shared_layout.build_people(port, user_headers, episode, give_vectors)
            _drop_queued_tasks()
            connection.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            print(f"{'read':<36} {'small ms':>9} {'large ms':>9} {'ratio':>6}")
            time_pairs(conn, shared_layout.shared_cases(user_headers, QUESTION), args, 1.5)
        return

    a, b, d = user_headers("bench-a"), user_headers("bench-b"), user_headers("bench-d")
    e, staff = user_headers("bench-e"), staff_headers()
    with gunicorn() as port:
        build(port, many=not args.one_session)
        large = ChatSession.objects.get(owner__username="bench-a", title="A large old")
        small = ChatSession.objects.get(owner__username="bench-b", title="B small")
        sessions = {
            name: ChatSession.objects.filter(owner__username=name).count() for name in ("bench-d", "bench-e")
        }
        everything = ChatSession.objects.count()
        connection.close()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        cases: dict[str, tuple[tuple[str, dict], tuple[str, dict]]] = {}
        small_paths = reads_for(conn, str(small.uuid), b)
        large_paths = reads_for(conn, str(large.uuid), a)
        for name in small_paths:
            cases[name] = ((small_paths[name], b), (large_paths[name], a))
        cases["session list (10 sessions)"] = (("/api/sessions/", d), ("/api/sessions/", a))

        print(f"{'read':<36} {'small ms':>9} {'large ms':>9} {'ratio':>6}")
        for name in ("context", "context (budget 600)"):
            small_tokens = json.loads(get(conn, small_paths[name], b)[2])["token_count"]
            large_tokens = json.loads(get(conn, large_paths[name], a)[2])["token_count"]
            print(f"  {name}: prompts of {small_tokens} and {large_tokens} tokens")
        time_pairs(conn, cases, args, 1.3)
        if args.one_session:
            return

        print(f"\nsearch across sessions: D's {sessions['bench-d']:,} against many")
        across = "/api/search/?" + urlencode({"q": SEARCH, "limit": 10})
        rare = "/api/search/?" + urlencode({"q": RARE_SEARCH, "limit": 10})
        time_pairs(
            conn,
            {
                f"across {sessions['bench-e']:,} sessions": ((across, d), (across, e)),
                f"across {sessions['bench-e']:,}, a rare word": ((rare, d), (rare, e)),
                f"staff: all {everything:,} sessions": ((across, d), (across, staff)),
                f"staff: all {everything:,}, a rare word": ((rare, d), (rare, staff)),
            },
            args,
            1.5,
        )
        shared_layout.build_people(port, user_headers, episode, give_vectors)
        connection.close()
        print("\nshared memory: a person's 1,000 shared sessions against 10")
        time_pairs(conn, shared_layout.shared_cases(user_headers, QUESTION), args, 1.5)
        conn.close()


if __name__ == "__main__":
    main()

"""Does the context endpoint slow down as a session grows?

Sessions on PostgreSQL of 100, 1,000 and 100,000 episodes, shaped the way a busy
session looks: a summary chain tiling the older part (one row per 25
episodes, as the offline backend's cumulative rows come out, so the long
session has about 4,000 rows), three episodes summarization has not reached
yet, and the eight recent ones. ``GET /api/sessions/{uuid}/context/`` is
timed through the test client with token authentication (URL routing, DRF,
auth, throttling, the session lookup and the builder: everything but the
socket), rotating through the sessions run by run so background load hits
all alike. Prints medians, the 90th percentile, queries per request and the
ratios to 100k (goal for 100k/100: at most 1.2). The 100-episode session has
4 summary rows, the others more than ``CONTEXT_MAX_SUMMARIES`` (20), of which
the builder reads 20, so their prompts are longer; the 1,000-episode session
separates that from any cost of the session's length.

    .venv/bin/python bench/context_latency.py [--runs 400]

``BENCH_DATABASE_URL`` picks the database (default ``nexus_ctx_bench``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

os.environ.setdefault("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/nexus_ctx_bench")

from bench.support import setup_django  # noqa: E402

# The test client's host, and a request rate far above the throttle's default.
setup_django(DJANGO_ALLOWED_HOSTS="testserver", API_THROTTLE_USER="100000000/minute", LOG_LEVEL="WARNING")

from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402
from django.db.models import F  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402
from rest_framework.authtoken.models import Token  # noqa: E402
from rest_framework.test import APIClient  # noqa: E402

from sessions_app.models import ChatSession, Episode  # noqa: E402
from sessions_app.tokens import count_episode_tokens, count_tokens  # noqa: E402
from summaries.context import build_context  # noqa: E402
from summaries.models import Summary  # noqa: E402

SIZES = (100, 1_000, 100_000)
EPISODES_PER_SUMMARY = 25
LAGGING = 3
RECENT = 8
QUESTION = "Which of the options we discussed would you recommend for a small team?"
USER_TEXT = "How should we size the worker pool for the summarization queue on two cores? "
REPLY_TEXT = (
    "Start with two worker processes and a prefetch multiplier of one. Each summary call mostly waits "
    "on the model, so more processes than cores can help, but watch memory. Measure queue latency "
    "under a realistic load before changing it, and keep the visibility timeout above the hard limit."
)
SUMMARY_TEXT = (
    "The user asked how to run the summarization workers on a small machine. The assistant suggested "
    "two processes with a prefetch multiplier of one, explained why model calls are I/O bound, and "
    "recommended measuring queue latency before tuning further."
)


def build_session(owner, size: int) -> ChatSession:
    """A session of ``size`` episodes with its chain, by bulk inserts, counters kept right."""
    title = f"context bench {size}"
    existing = ChatSession.objects.filter(owner=owner, title=title).first()
    if existing is not None and existing.cached_episode_count == size:
        return existing
    if existing is not None:
        existing.delete()
    session = ChatSession.objects.create(owner=owner, title=title)
    tokens = count_episode_tokens(USER_TEXT, REPLY_TEXT)
    made = 0
    while made < size:
        n = min(5_000, size - made)
        Episode.objects.bulk_create(
            Episode(
                session=session,
                owner=owner,
                position=made + i + 1,
                user_input=f"{USER_TEXT}({made + i})",
                response=REPLY_TEXT,
                token_count=tokens,
            )
            for i in range(n)
        )
        made += n
    ChatSession.objects.filter(pk=session.pk).update(
        cached_episode_count=F("cached_episode_count") + size,
        cached_total_tokens=F("cached_total_tokens") + size * tokens,
        cached_last_position=F("cached_last_position") + size,
    )
    ids = list(Episode.objects.filter(session=session).order_by("pk").values_list("pk", flat=True))
    covered = ids[: size - LAGGING - RECENT]
    summary_tokens = count_tokens(SUMMARY_TEXT)
    Summary.objects.bulk_create(
        (
            Summary(
                session=session,
                content=SUMMARY_TEXT,
                token_count=summary_tokens,
                first_episode_id=chunk[0],
                last_episode_id=chunk[-1],
                model="bench",
            )
            for chunk in (
                covered[i : i + EPISODES_PER_SUMMARY] for i in range(0, len(covered), EPISODES_PER_SUMMARY)
            )
        ),
        batch_size=2_000,
    )
    session.refresh_from_db()
    return session


def time_request(client: APIClient, url: str) -> float:
    start = time.perf_counter()
    # secure=True: production settings redirect plain HTTP to HTTPS.
    response = client.get(url, {"question": QUESTION}, secure=True)
    elapsed = (time.perf_counter() - start) * 1000
    if response.status_code != 200:
        raise SystemExit(f"{url} answered {response.status_code}: {response.content[:200]!r}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--warmup", type=int, default=30)
    args = parser.parse_args()

    owner, _ = get_user_model().objects.get_or_create(username="bench-context")
    token, _ = Token.objects.get_or_create(user=owner)
    sessions = {size: build_session(owner, size) for size in SIZES}
    with connection.cursor() as cursor:
        # The steady state autovacuum keeps: statistics, and the search
        # index's pending entries merged (a just-built table has thousands).
        cursor.execute("VACUUM ANALYZE sessions_app_episode")
        cursor.execute("ANALYZE summaries_summary")
        cursor.execute("ANALYZE sessions_app_chatsession")

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    urls = {size: f"/api/sessions/{s.uuid}/context/" for size, s in sessions.items()}

    for size in SIZES:
        for _ in range(args.warmup):
            time_request(client, urls[size])

    samples: dict[int, list[float]] = {size: [] for size in SIZES}
    builder: dict[int, list[float]] = {size: [] for size in SIZES}
    for run in range(args.runs):
        shift = run % len(SIZES)
        order = SIZES[shift:] + SIZES[:shift]
        for size in order:
            samples[size].append(time_request(client, urls[size]))
            start = time.perf_counter()
            build_context(session=sessions[size], question=QUESTION)
            builder[size].append((time.perf_counter() - start) * 1000)

    print(
        f"GET /api/sessions/{{uuid}}/context/ on PostgreSQL, {args.runs} runs per size "
        f"(after {args.warmup} warm-up)"
    )
    print(
        f"{'episodes':>9} {'summary rows':>13} {'queries':>8} {'median ms':>10} {'p90 ms':>8} "
        f"{'builder ms':>11} {'tokens':>7}"
    )
    medians: dict[int, float] = {}
    builder_medians: dict[int, float] = {}
    for size in SIZES:
        with CaptureQueriesContext(connection) as ctx:
            time_request(client, urls[size])
        result = build_context(session=sessions[size], question=QUESTION)
        rows = Summary.objects.filter(session=sessions[size]).count()
        medians[size] = statistics.median(samples[size])
        builder_medians[size] = statistics.median(builder[size])
        p90 = statistics.quantiles(samples[size], n=10)[-1]
        print(
            f"{size:>9,} {rows:>13,} {len(ctx.captured_queries):>8} {medians[size]:>10.2f} {p90:>8.2f} "
            f"{builder_medians[size]:>11.2f} {result.token_count:>7}"
        )
    large = SIZES[-1]
    for small in SIZES[:-1]:
        print(
            f"ratio {large:,}/{small:,}: endpoint {medians[large] / medians[small]:.2f}, "
            f"builder {builder_medians[large] / builder_medians[small]:.2f}"
        )
    print("goal: endpoint ratio 100,000/100 at most 1.2")


if __name__ == "__main__":
    main()

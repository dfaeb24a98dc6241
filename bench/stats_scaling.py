"""Does the per-session stats call, or the episode insert, slow down as a session grows?

Fills PostgreSQL sessions with 10, 1,000 and 100,000 episodes (beside 200
other sessions of 250 episodes) and times, round by round,
at each size, ``ChatSession.objects.stats_for`` (what the summarization gate
and the episode-stats endpoint read) and ``episode_create`` (the write path,
signal and gate included). Prints the medians and the ratio 100k/10.

    .venv/bin/python bench/stats_scaling.py
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.support import median_ms, setup_django  # noqa: E402

# The gate query runs on every insert exactly as with the defaults (its
# episode probe stops after SUMMARY_MIN_EPISODES entries), but an unreachable
# token threshold keeps it from firing: this measures the write path, not
# the summarizer.
setup_django(SUMMARY_THRESHOLD_TOKENS=str(10**15))

from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402
from django.db.models import F  # noqa: E402

from sessions_app.models import ChatSession, Episode  # noqa: E402
from sessions_app.services import episode_create  # noqa: E402
from sessions_app.tokens import count_episode_tokens  # noqa: E402

SIZES = (10, 1_000, 100_000)
RUNS = 40
BACKGROUND_SESSIONS = 200
BACKGROUND_EPISODES = 250
ROUNDS = 9
USER_TEXT = "How does the rolling summary keep long conversations cheap?"
REPLY_TEXT = "It folds older exchanges into short summaries. Recent ones stay in full."


def fill(session: ChatSession, target: int) -> None:
    """Bring the session to ``target`` episodes with bulk inserts, counters kept right."""
    tokens = count_episode_tokens(USER_TEXT, REPLY_TEXT)
    missing = target - Episode.objects.filter(session=session).count()
    batch = 5_000
    while missing > 0:
        n = min(batch, missing)
        start = ChatSession.objects.get(pk=session.pk).cached_last_position
        Episode.objects.bulk_create(
            Episode(
                session=session,
                owner_id=session.owner_id,
                position=start + k,
                user_input=USER_TEXT,
                response=REPLY_TEXT,
                token_count=tokens,
            )
            for k in range(1, n + 1)
        )
        ChatSession.objects.filter(pk=session.pk).update(
            cached_episode_count=F("cached_episode_count") + n,
            cached_total_tokens=F("cached_total_tokens") + n * tokens,
            cached_last_position=F("cached_last_position") + n,
        )
        missing -= n


def trim_to(session: ChatSession, last_id: int | None) -> None:
    """Drop the episodes the insert timing added, counters included."""
    added = Episode.objects.filter(session=session, pk__gt=last_id or 0)
    n_added = added.count()
    added.delete()
    ChatSession.objects.filter(pk=session.pk).update(
        cached_episode_count=F("cached_episode_count") - n_added,
        cached_total_tokens=F("cached_total_tokens") - n_added * count_episode_tokens(USER_TEXT, REPLY_TEXT),
    )


def main() -> None:
    user, _ = get_user_model().objects.get_or_create(username="bench-stats")
    ChatSession.objects.filter(owner=user).delete()
    # Other people's sessions around the measured ones, as in any real
    # database: with only a handful of sessions in the table PostgreSQL's
    # estimate of "episodes per session" is so high that it walks the
    # primary key instead of the (session, id) index.
    for n in range(BACKGROUND_SESSIONS):
        fill(ChatSession.objects.create(owner=user, title=f"background {n}"), BACKGROUND_EPISODES)
    sessions = {}
    for size in SIZES:
        sessions[size] = ChatSession.objects.create(owner=user, title=f"stats scaling {size}")
        fill(sessions[size], size)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE sessions_app_episode")

    # Sizes take turns round by round, so background noise falls on all alike.
    samples: dict[int, dict[str, list[float]]] = {size: {"stats": [], "insert": [], "aggregate": []} for size in SIZES}
    for _ in range(ROUNDS):
        for size, session in sessions.items():
            samples[size]["stats"].append(median_ms(lambda: ChatSession.objects.stats_for(session.pk), runs=RUNS))
            samples[size]["aggregate"].append(
                median_ms(
                    lambda: ChatSession.objects.with_stats().filter(pk=session.pk).values("total_tokens").get(),
                    runs=3,
                    warmup=1,
                )
            )
            last_id = ChatSession.objects.stats_for(session.pk)["last_episode_id"]
            samples[size]["insert"].append(
                median_ms(
                    lambda: episode_create(session=session, user_input=USER_TEXT, response=REPLY_TEXT), runs=RUNS
                )
            )
            trim_to(session, last_id)

    results = {size: {k: statistics.median(v) for k, v in figures.items()} for size, figures in samples.items()}
    for size in SIZES:
        assert ChatSession.objects.stats_for(sessions[size].pk)["episode_count"] == size
        r = results[size]
        print(
            f"{size:>7} episodes: stats_for median {r['stats']:.3f} ms, episode insert median {r['insert']:.3f} ms"
            f" (for comparison, the full COUNT/SUM aggregate: {r['aggregate']:.3f} ms)"
        )
    small, large = results[SIZES[0]], results[SIZES[-1]]
    print(
        f"ratio 100k/10: stats_for {large['stats'] / small['stats']:.2f},"
        f" insert {large['insert'] / small['insert']:.2f} (goal <= 1.2);"
        f" aggregate {large['aggregate'] / small['aggregate']:.1f}"
    )
    ChatSession.objects.filter(owner=user).delete()


if __name__ == "__main__":
    main()

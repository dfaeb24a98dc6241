"""Does the per-session stats call, or the episode insert, slow down as a session grows?

Fills one PostgreSQL session with 10, 1,000 and 100,000 episodes and times,
at each size, ``ChatSession.objects.stats_for`` (what the summarization gate
and the episode-stats endpoint read) and ``episode_create`` (the write path,
signal and gate included). Prints the medians and the ratio 100k/10.

    .venv/bin/python bench/stats_scaling.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.support import median_ms, setup_django  # noqa: E402

# The gate still runs on every insert, but never fires: this measures the
# write path, not the summarizer.
setup_django(SUMMARY_MIN_EPISODES="1000000000")

from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402
from django.db.models import F  # noqa: E402

from sessions_app.models import ChatSession, Episode  # noqa: E402
from sessions_app.services import episode_create  # noqa: E402
from sessions_app.tokens import count_episode_tokens  # noqa: E402

SIZES = (10, 1_000, 100_000)
RUNS = 300
USER_TEXT = "How does the rolling summary keep long conversations cheap?"
REPLY_TEXT = "It folds older exchanges into short summaries. Recent ones stay in full."


def fill(session: ChatSession, target: int) -> None:
    """Bring the session to ``target`` episodes with bulk inserts, counters kept right."""
    tokens = count_episode_tokens(USER_TEXT, REPLY_TEXT)
    missing = target - Episode.objects.filter(session=session).count()
    batch = 5_000
    while missing > 0:
        n = min(batch, missing)
        Episode.objects.bulk_create(
            Episode(session=session, user_input=USER_TEXT, response=REPLY_TEXT, token_count=tokens)
            for _ in range(n)
        )
        ChatSession.objects.filter(pk=session.pk).update(
            cached_episode_count=F("cached_episode_count") + n,
            cached_total_tokens=F("cached_total_tokens") + n * tokens,
        )
        missing -= n
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE sessions_app_episode")


def main() -> None:
    user, _ = get_user_model().objects.get_or_create(username="bench-stats")
    ChatSession.objects.filter(owner=user).delete()
    session = ChatSession.objects.create(owner=user, title="stats scaling")
    results: dict[int, tuple[float, float, float]] = {}
    for size in SIZES:
        fill(session, size)
        stats_ms = median_ms(lambda: ChatSession.objects.stats_for(session.pk), runs=RUNS)
        aggregate_ms = median_ms(
            lambda: ChatSession.objects.with_stats().filter(pk=session.pk).values("episode_count", "total_tokens").get(),
            runs=RUNS // 10,
        )
        last_id = ChatSession.objects.stats_for(session.pk)["last_episode_id"]
        insert_ms = median_ms(
            lambda: episode_create(session=session, user_input=USER_TEXT, response=REPLY_TEXT), runs=RUNS
        )
        # Keep the size honest for the next step: drop what the insert timing added.
        added = Episode.objects.filter(session=session, pk__gt=last_id)
        n_added = added.count()
        added.delete()
        ChatSession.objects.filter(pk=session.pk).update(
            cached_episode_count=F("cached_episode_count") - n_added,
            cached_total_tokens=F("cached_total_tokens") - n_added * count_episode_tokens(USER_TEXT, REPLY_TEXT),
        )
        stats = ChatSession.objects.stats_for(session.pk)
        assert stats["episode_count"] == size, stats
        results[size] = (stats_ms, insert_ms, aggregate_ms)
        print(
            f"{size:>7} episodes: stats_for median {stats_ms:.3f} ms, episode insert median {insert_ms:.3f} ms"
            f" (for comparison, the full COUNT/SUM aggregate: {aggregate_ms:.3f} ms)"
        )

    small, large = results[SIZES[0]], results[SIZES[-1]]
    print(
        f"ratio 100k/10: stats_for {large[0] / small[0]:.2f}, insert {large[1] / small[1]:.2f} (goal <= 1.2);"
        f" aggregate {large[2] / small[2]:.1f}"
    )
    ChatSession.objects.filter(pk=session.pk).delete()


if __name__ == "__main__":
    main()

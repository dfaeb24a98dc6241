"""What reading a question's candidates' vector rows costs, by how the ids are asked for.

On the layout of ``bench/read_scaling.py`` (run it first: it builds the
database), 250 rows of the large session's newest 5,000 are read, as a
context reads its candidates (``sessions_app.semantic.passage_rows``): once
with the ids written into the statement's text (how they were asked for
before), once as one array parameter (``nexus.binary_rows.fetch_by_ids``),
alternating. Each round draws other ids, as every question does; then the
same ids every round, as ``read_scaling.py``'s one question does. Prints
the medians.

    .venv/bin/python bench/candidate_rows.py [--rounds 400]

``BENCH_DATABASE_URL``: the database ``read_scaling.py`` built (default ``nexus_read_bench``).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

os.environ.setdefault("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/nexus_read_bench")

from bench.support import setup_django

setup_django()

import psycopg
from django.db import connection

from nexus.binary_rows import fetch_by_ids
from sessions_app.models import ChatSession, EpisodeVector

CANDIDATES = 250
NEWEST = 5_000
SELECT = 'SELECT "episode_id", "vector", "spans" FROM "sessions_app_episodevector"'


def ids_in_text(ids: list[int]) -> list[tuple]:
    """The rows as they were read before: the ids written into the query, binary results."""
    listed = ", ".join(map(str, ids))
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.format = psycopg.pq.Format.BINARY
        cursor.execute(f'{SELECT} WHERE "episode_id" IN ({listed})')
        return cursor.fetchall()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=400)
    args = parser.parse_args()
    large = ChatSession.objects.filter(title="A large old").first()
    if large is None:
        sys.exit("No layout here: run bench/read_scaling.py on this database first.")
    newest = list(
        EpisodeVector.objects.filter(session=large)
        .order_by("-episode_id")
        .values_list("episode_id", flat=True)[:NEWEST]
    )
    connection.ensure_connection()
    ways = {
        "ids in the text": ids_in_text,
        "one array parameter": lambda ids: fetch_by_ids(SELECT, "episode_id", ids),
    }
    fixed = sorted(random.Random(7).sample(newest, CANDIDATES))
    print(f"{CANDIDATES} rows of {NEWEST:,}, medians of {args.rounds} rounds (the first 20 left out)")
    for label, draw in (("other ids each round", True), ("the same ids each round", False)):
        times: dict[str, list[float]] = {way: [] for way in ways}
        for n in range(args.rounds):
            ids = sorted(random.sample(newest, CANDIDATES)) if draw else fixed
            for way in list(ways) if n % 2 else list(reversed(ways)):
                start = time.perf_counter()
                rows = ways[way](ids)
                times[way].append(time.perf_counter() - start)
                assert len(rows) == CANDIDATES
        medians = {way: statistics.median(t[20:]) * 1e3 for way, t in times.items()}
        text, array = medians.values()
        print(
            f"{label:26} ids in the text {text:.3f} ms   one array parameter {array:.3f} ms   ratio {array / text:.2f}"
        )


if __name__ == "__main__":
    main()

"""Where a context's time goes: each step of ``build_context`` timed in
process, for the small and the large session of ``bench/read_scaling.py``'s
layout (run it first: it builds the database), and what the large one spends more.

Each step's function is wrapped to add up its wall time in a context (a
step inside another is counted in both); the sessions alternate context by
context, ``--runs`` each, and each step's median over a session's contexts is printed.

    .venv/bin/python bench/context_steps.py [--budget 600] [--runs 200]

``BENCH_DATABASE_URL``: the database ``read_scaling.py`` built (default ``nexus_read_bench``).
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import time
from collections import defaultdict
from concurrent.futures import Future
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

os.environ.setdefault("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/nexus_read_bench")

from bench.http_load import setup_write_bench

setup_write_bench()

from bench.read_scaling import QUESTION
from sessions_app import retrieval, semantic
from sessions_app.models import ChatSession
from sessions_app.semantic import neighbours, passage_rows, variety, vectors
from summaries import context
from summaries.context import retrieved, sources

spent: defaultdict[str, float] = defaultdict(float)

#: (owner, attribute, label): the steps timed, in the order printed.
STEPS = [
    (context, "build_context", "the whole context"),
    (retrieval.PendingRanking, "hits", "retrieval's ranking (PendingRanking.hits)"),
    (Future, "result", "  waiting for the question's vector"),
    (semantic, "closeness", "  closeness in meaning (neighbours.closeness)"),
    (neighbours, "_session_vectors", "    the kept whole exchanges, newer ones read"),
    (neighbours, "_candidates", "    the candidates chosen (_candidates)"),
    (passage_rows.PassageRows, "read", "    the candidates' rows (PassageRows.read)"),
    (passage_rows, "fetch_by_ids", "      the query"),
    (passage_rows, "to_matrix", "      to float32"),
    (neighbours.Closeness, "of", "    standings, closest passages (Closeness.of)"),
    (retrieval, "fuse", "  fusing the rankings, varied (fuse)"),
    (variety, "varied", "    the choice that varies them (varied)"),
    (retrieval, "rank_question", "the question's words ranked (rank_question)"),
    (context, "retrieved_pieces", "the ranked exchanges quoted (retrieved_pieces)"),
    (retrieved, "cannot_clear", "  those that cannot clear the floor (cannot_clear)"),
    (sources, "quoted_texts", "  their text and marked words (quoted_texts)"),
    (retrieved, "passage_evidence", "  their passages' evidence (passage_evidence)"),
    (retrieved, "select", "  the passages chosen (select)"),
    (sources, "recent_window", "the recent window (recent_window)"),
]


def timed(function, label: str):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            spent[label] += time.perf_counter() - start

    return wrapper


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--budget", type=int, default=600)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    if vectors.to_matrix is not passage_rows.to_matrix:
        sys.exit("passage_rows no longer reads through vectors.to_matrix: update STEPS")
    for owner, name, label in STEPS:
        setattr(owner, name, timed(getattr(owner, name), label))
    small = ChatSession.objects.filter(title="B small").first()
    large = ChatSession.objects.filter(title="A large old").first()
    if small is None or large is None:
        sys.exit("No layout here: run bench/read_scaling.py on this database first.")

    def run(session: ChatSession) -> None:
        fresh = ChatSession.objects.get(pk=session.pk)  # as a request reads it
        context.build_context(session=fresh, question=QUESTION, budget=args.budget)

    for _ in range(10):
        run(small), run(large)
    times: dict[str, defaultdict[str, list[float]]] = {"small": defaultdict(list), "large": defaultdict(list)}
    for _ in range(args.runs):
        for name, session in (("small", small), ("large", large)):
            spent.clear()
            run(session)
            for _, _, label in STEPS:
                times[name][label].append(spent.get(label, 0.0) * 1e3)
    print(f"budget {args.budget}, {args.runs} contexts each, alternating; medians, ms")
    print(f"{'step':52} {'small':>7} {'large':>7} {'more':>7}")
    for _, _, label in STEPS:
        small_ms, large_ms = (statistics.median(times[name][label]) for name in ("small", "large"))
        print(f"{label:52} {small_ms:7.2f} {large_ms:7.2f} {large_ms - small_ms:+7.2f}")


if __name__ == "__main__":
    main()

"""What numpy's BLAS threads cost a context when the machine is busy.

The large session of ``bench/read_scaling.py``'s layout (run it first: it
builds the database) gets contexts in process, with numpy's BLAS on as many
threads as it finds (OpenBLAS's default) and on one
(``sessions_app.semantic.threads``), alternating context by context in one
process, while ``--busy`` other processes keep cores busy the way other
requests do. Prints the medians and 90th percentiles of the whole context and of
the question's comparison with the session's vectors (``neighbours.closeness``).

    .venv/bin/python bench/blas_threads.py [--runs 200] [--busy 1] [--budget 600]

``BENCH_DATABASE_URL``: the database ``read_scaling.py`` built (default ``nexus_read_bench``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

os.environ.setdefault("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/nexus_read_bench")

from bench.http_load import setup_write_bench

setup_write_bench()

from threadpoolctl import threadpool_limits

from bench.context_steps import spent, timed
from bench.read_scaling import QUESTION
from sessions_app import semantic
from sessions_app.models import ChatSession
from summaries import context


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--busy", type=int, default=1, help="processes kept busy beside the contexts")
    parser.add_argument("--budget", type=int, default=600)
    args = parser.parse_args()
    large = ChatSession.objects.filter(title="A large old").first()
    if large is None:
        sys.exit("No layout here: run bench/read_scaling.py on this database first.")
    semantic.closeness = timed(semantic.closeness, "closeness")
    found = os.cpu_count() or 1  # OpenBLAS's default: a thread per core

    def run() -> None:
        fresh = ChatSession.objects.get(pk=large.pk)  # as a request reads it
        context.build_context(session=fresh, question=QUESTION, budget=args.budget)

    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    try:
        times: dict[int, tuple[list[float], list[float]]] = {found: ([], []), 1: ([], [])}
        for round_ in range(10 + args.runs):
            for threads in (found, 1) if round_ % 2 else (1, found):
                with threadpool_limits(limits=threads, user_api="blas"):
                    spent.clear()
                    start = time.perf_counter()
                    run()
                    took = (time.perf_counter() - start) * 1e3
                if round_ >= 10:
                    times[threads][0].append(took)
                    times[threads][1].append(spent["closeness"] * 1e3)
    finally:
        for process in busy:
            process.kill()
    print(f"budget {args.budget}, {args.runs} contexts each, alternating, {args.busy} busy process(es); ms")
    print(f"{'BLAS threads':>12} {'context median':>15} {'p90':>7} {'closeness median':>17} {'p90':>7}")
    for threads, (whole, compared) in times.items():
        deciles = statistics.quantiles(whole, n=10)[-1], statistics.quantiles(compared, n=10)[-1]
        print(
            f"{threads:>12} {statistics.median(whole):>15.2f} {deciles[0]:>7.2f}"
            f" {statistics.median(compared):>17.2f} {deciles[1]:>7.2f}"
        )


if __name__ == "__main__":
    main()

"""Bulk episode writes through the API: 500 episodes per request.

``POST /api/sessions/{uuid}/episodes/`` with a JSON list, under gunicorn
(nexus/gunicorn.conf.py) on PostgreSQL with the Redis broker, token auth.
Each request is one transaction: one counter UPDATE, one multi-row INSERT
and one summarization check. Prints episodes/s (goal: at least 2,000/s).

    .venv/bin/python bench/bulk_write.py [--batch 500] [--seconds 10] [--concurrency 2]

``BENCH_DATABASE_URL`` (default ``nexus_api_bench``), ``BENCH_BROKER_URL``
(default Redis db 5).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.http_load import bench_writer, gunicorn, post_json, run_load, setup_write_bench  # noqa: E402

setup_write_bench()

from sessions_app.models import ChatSession  # noqa: E402


def batch(size: int) -> list[dict]:
    return [
        {
            "user_input": f"Question {n}: how does the summary chain stay in order when rows are added?",
            "response": f"Answer {n}: each row covers a contiguous range of episode ids, oldest first.",
            "metadata": {"n": n},
        }
        for n in range(size)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, default=2)
    args = parser.parse_args()

    headers, (session,) = bench_writer("bulk write bench")

    path = f"/api/sessions/{session.uuid}/episodes/"
    body = json.dumps(batch(args.batch)).encode()
    with gunicorn() as port:
        status, payload = post_json(port, path, batch(args.batch), headers)
        assert status == 201 and len(payload) == args.batch, (status, str(payload)[:300])
        run_load(port, path, body, headers=headers, seconds=2.0, concurrency=args.concurrency)  # warm-up
        result = run_load(port, path, body, headers=headers, seconds=args.seconds, concurrency=args.concurrency)

    stored = ChatSession.objects.with_stats().get(pk=session.pk)
    print(f"batch {args.batch}, concurrency {args.concurrency}, {result.seconds:.1f} s, errors {result.errors}")
    print(f"requests: {result.requests} ({result.rate:.2f}/s, median {result.median_ms:.0f} ms each)")
    print(f"bulk writes: {result.requests * args.batch / result.seconds:8.0f} episodes/s  (goal >= 2000)")
    print(f"session holds {stored.episode_count} episodes; counters {stored.cached_episode_count}")


if __name__ == "__main__":
    main()

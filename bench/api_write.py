"""Single episode writes: the API against a bare Django view, side by side.

Both run in the same gunicorn (nexus/gunicorn.conf.py, PostgreSQL, Redis
broker so the summarization gate can enqueue) in the same run:

- API: ``POST /api/sessions/{uuid}/episodes/`` with token authentication:
  DRF, throttling, validation, the visibility check, counters, the
  post_save signal and the after-commit summarization gate;
- bare: ``POST /bench/bare-episode/{pk}/`` (bench/write_urls.py): parse,
  count tokens, INSERT. No DRF, no auth, no signal.

Rounds alternate between the two so background noise hits both alike; the
medians of the rounds are compared. Goal: API rate / bare rate >= 0.8.

    .venv/bin/python bench/api_write.py [--rounds 6] [--seconds 5] [--concurrency 4] [--without-gate]

``--without-gate`` adds a diagnostic run with the post_save summarization
trigger disconnected (bench/write_urls.py), to show what the gate costs.

``BENCH_DATABASE_URL`` (default ``nexus_api_bench``), ``BENCH_BROKER_URL``
(default Redis db 5).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.http_load import bench_writer, gunicorn, run_load, setup_write_bench  # noqa: E402

setup_write_bench()

from django.db import connection  # noqa: E402

from bench.write_urls import create_position_sequence  # noqa: E402
from sessions_app.models import ChatSession  # noqa: E402

PAYLOAD = {
    "user_input": "How do I keep a chat session's memory small without losing what was said?",
    "response": (
        "Store every exchange, then fold older ones into short summaries in the background. "
        "Keep the last few exchanges in full and send the summaries for the rest."
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument(
        "--without-gate", action="store_true", help="also measure with the summarization trigger disconnected"
    )
    args = parser.parse_args()

    auth, (api_session, bare_session) = bench_writer("api write bench", "bare write bench")
    with connection.cursor() as cursor:
        create_position_sequence(cursor)
    connection.close()

    body = json.dumps(PAYLOAD).encode()
    api = (f"/api/sessions/{api_session.uuid}/episodes/", auth)
    bare = (f"/bench/bare-episode/{bare_session.pk}/", {})

    print(f"concurrency {args.concurrency}, {args.rounds} rounds of {args.seconds:.0f} s each")
    api_rate, bare_rate, errors = measure(args, body, api, bare)
    stored = ChatSession.objects.with_stats().get(pk=api_session.pk)
    print()
    print(f"API  single writes: {api_rate:8.1f} episodes/s (median; errors {errors})")
    print(f"bare single writes: {bare_rate:8.1f} episodes/s (median)")
    print(f"ratio API/bare:     {api_rate / bare_rate:8.2f}  (goal >= 0.80)")
    print(f"API session now holds {stored.episode_count} episodes; counters {stored.cached_episode_count}")
    if args.without_gate:
        print()
        print("diagnostic: the same with the summarization trigger (post_save -> gate) disconnected")
        api_rate, bare_rate, errors = measure(args, body, api, bare, BENCH_WITHOUT_GATE="1")
        print(f"API without gate:   {api_rate:8.1f} episodes/s; bare {bare_rate:8.1f}; ratio {api_rate / bare_rate:.2f}")


def measure(
    args: argparse.Namespace, body: bytes, api: tuple[str, dict], bare: tuple[str, dict], **env: str
) -> tuple[float, float, int]:
    with gunicorn(**env) as port:
        # Warm both paths (imports, connections, tiktoken) before measuring.
        for path, headers in (api, bare):
            run_load(port, path, body, headers=headers, seconds=1.0, concurrency=args.concurrency)
        api_rates, bare_rates, errors = [], [], 0
        for n in range(args.rounds):
            order = (api, bare) if n % 2 == 0 else (bare, api)
            for path, headers in order:
                result = run_load(
                    port, path, body, headers=headers, seconds=args.seconds, concurrency=args.concurrency
                )
                errors += result.errors
                (api_rates if path == api[0] else bare_rates).append(result.rate)
                print(f"  round {n + 1}: {'api ' if path == api[0] else 'bare'} {result.rate:8.1f} req/s")
    return statistics.median(api_rates), statistics.median(bare_rates), errors

if __name__ == "__main__":
    main()

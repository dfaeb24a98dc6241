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

    .venv/bin/python bench/api_write.py [--rounds 6] [--seconds 5] [--concurrency 4] [--without-gate] [--key]

``--without-gate`` adds a diagnostic run with the post_save summarization
trigger disconnected (bench/write_urls.py), to show what the gate costs.
``--key`` adds a third load: the same API writes with an API key as
``Authorization: Bearer`` instead of the account token (goal: key rate /
token rate >= 0.9).

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
    parser.add_argument(
        "--key", action="store_true", help="also write with an API key (Bearer), to compare with the account token"
    )
    args = parser.parse_args()

    auth, (api_session, bare_session) = bench_writer("api write bench", "bare write bench")
    with connection.cursor() as cursor:
        create_position_sequence(cursor)
    loads = {
        "api": (f"/api/sessions/{api_session.uuid}/episodes/", auth),
        "bare": (f"/bench/bare-episode/{bare_session.pk}/", {}),
    }
    if args.key:
        loads["key"] = (loads["api"][0], {"Authorization": f"Bearer {bench_key(api_session.owner)}"})
    connection.close()

    body = json.dumps(PAYLOAD).encode()
    print(f"concurrency {args.concurrency}, {args.rounds} rounds of {args.seconds:.0f} s each")
    rates, errors = measure(args, body, loads)
    stored = ChatSession.objects.with_stats().get(pk=api_session.pk)
    print()
    print(f"API  single writes: {rates['api']:8.1f} episodes/s (median; errors {errors})")
    print(f"bare single writes: {rates['bare']:8.1f} episodes/s (median)")
    print(f"ratio API/bare:     {rates['api'] / rates['bare']:8.2f}  (goal >= 0.80)")
    if args.key:
        print(f"API key writes:     {rates['key']:8.1f} episodes/s (median)")
        print(f"ratio key/token:    {rates['key'] / rates['api']:8.2f}  (goal >= 0.90)")
    print(f"API session now holds {stored.episode_count} episodes; counters {stored.cached_episode_count}")
    if args.without_gate:
        print()
        print("diagnostic: the same with the summarization trigger (post_save -> gate) disconnected")
        rates, errors = measure(args, body, loads, BENCH_WITHOUT_GATE="1")
        print(
            f"API without gate:   {rates['api']:8.1f} episodes/s; bare {rates['bare']:8.1f}; "
            f"ratio {rates['api'] / rates['bare']:.2f}"
        )


def bench_key(user) -> str:
    """A new API key of the bench user (each run its own: the key is shown once)."""
    from nexus.api.keys.services import key_create

    return key_create(user=user, name="api write bench")[1]


def measure(
    args: argparse.Namespace, body: bytes, loads: dict[str, tuple[str, dict]], **env: str
) -> tuple[dict[str, float], int]:
    """The median rate of each load, the loads taking turns in a rotating order."""
    rates: dict[str, list[float]] = {name: [] for name in loads}
    errors = 0
    with gunicorn(**env) as port:
        # Warm every path (imports, connections, tiktoken) before measuring.
        for path, headers in loads.values():
            run_load(port, path, body, headers=headers, seconds=1.0, concurrency=args.concurrency)
        names = list(loads)
        for n in range(args.rounds):
            for name in names[n % len(names) :] + names[: n % len(names)]:
                path, headers = loads[name]
                result = run_load(
                    port, path, body, headers=headers, seconds=args.seconds, concurrency=args.concurrency
                )
                errors += result.errors
                rates[name].append(result.rate)
                print(f"  round {n + 1}: {name:4} {result.rate:8.1f} req/s")
    return {name: statistics.median(values) for name, values in rates.items()}, errors


if __name__ == "__main__":
    main()

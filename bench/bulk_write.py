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
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

os.environ.setdefault("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/nexus_api_bench")
os.environ["DJANGO_SETTINGS_MODULE"] = "bench.write_settings"

from bench.http_load import BENCH_BROKER_URL, gunicorn, post_json, run_load  # noqa: E402
from bench.support import setup_django  # noqa: E402

setup_django(DJANGO_SECURE_SSL_REDIRECT="0", CELERY_BROKER_URL=BENCH_BROKER_URL, LOG_LEVEL="WARNING")

from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402
from rest_framework.authtoken.models import Token  # noqa: E402

from sessions_app.models import ChatSession  # noqa: E402
from sessions_app.services import session_create  # noqa: E402


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

    user, _ = get_user_model().objects.get_or_create(username="bench-writer")
    token, _ = Token.objects.get_or_create(user=user)
    session = session_create(owner=user, title="bulk write bench")
    connection.close()

    path = f"/api/sessions/{session.uuid}/episodes/"
    headers = {"Authorization": f"Token {token.key}"}
    body = json.dumps(batch(args.batch)).encode()
    with gunicorn() as port:
        status, payload = post_json(port, path, batch(args.batch), headers)
        assert status == 201 and len(payload) == args.batch, (status, str(payload)[:300])
        run_load(port, path, body, headers=headers, seconds=2.0, concurrency=args.concurrency)  # warm-up
        result = run_load(port, path, body, headers=headers, seconds=args.seconds, concurrency=args.concurrency)

    stored = ChatSession.objects.with_stats().get(pk=session.pk)
    print(f"batch {args.batch}, concurrency {args.concurrency}, {result.seconds:.1f} s, errors {result.errors}")
    print(f"requests: {result.requests} ({result.rate:.2f}/s, {1000 / result.rate * args.concurrency:.0f} ms each)")
    print(f"bulk writes: {result.requests * args.batch / result.seconds:8.0f} episodes/s  (goal >= 2000)")
    print(f"session holds {stored.episode_count} episodes; counters {stored.cached_episode_count}")


if __name__ == "__main__":
    main()

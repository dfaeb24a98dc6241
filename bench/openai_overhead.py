"""What does ``/v1/chat/completions`` add to a streamed chat turn?

The same streamed turn, alternating in one run: straight to the fake model
server's OpenAI route (zero latency), and through Nexus's
``/v1/chat/completions`` (a live WSGI server in this process, the ``openai``
backend pointed at the same fake server), so Nexus's part is authentication,
throttling, the session lookup, building the memory, the model call and
storing the episode. Both are read as raw server-sent events with one httpx
client. Prints the median and 90th percentile of time to first token and
total time for both, and the added milliseconds (goal: under 15 ms added to
the total at the median).

    .venv/bin/python bench/openai_overhead.py [--runs 200]

``BENCH_DATABASE_URL`` picks the database (default ``nexus_openai_bench``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/nexus_openai_bench")

from tests.fake_model_server import FakeModelServer  # noqa: E402


from bench.support import setup_django  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()

    with FakeModelServer() as fake:
        # A broker and no worker, as in production: summarization is the
        # worker's job, not part of the turn measured here.
        setup_django(
            CELERY_BROKER_URL=os.environ.get("BENCH_BROKER_URL", "redis://127.0.0.1:6379/5"),
            DJANGO_ALLOWED_HOSTS="127.0.0.1",
            DJANGO_SECURE_SSL_REDIRECT="false",
            API_THROTTLE_USER="100000000/minute",
            LOG_LEVEL="WARNING",
            INFERENCE_BACKEND="openai",
            INFERENCE_SERVICE_URL=fake.url,
            CHAT_MODEL="fake-chat",
        )
        import httpx
        from django.contrib.auth import get_user_model
        from django.core.handlers.wsgi import WSGIHandler
        from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler
        from rest_framework.authtoken.models import Token

        from sessions_app.services import session_create

        class QuietHandler(WSGIRequestHandler):
            def log_message(self, *args: object) -> None:
                return None

        server = ThreadedWSGIServer(("127.0.0.1", 0), QuietHandler, allow_reuse_address=True)
        server.set_app(WSGIHandler())
        threading.Thread(target=server.serve_forever, daemon=True).start()
        nexus_url = f"http://127.0.0.1:{server.server_address[1]}"

        user, _ = get_user_model().objects.get_or_create(username="openai-bench")
        token, _ = Token.objects.get_or_create(user=user)
        session = session_create(owner=user, title="openai bench")
        body = {
            "model": "fake-chat",
            "stream": True,
            "messages": [{"role": "user", "content": "Tell me a story"}],
        }
        nexus_headers = {"Authorization": f"Bearer {token.key}", "X-Nexus-Session": str(session.uuid)}

        def turn(http: httpx.Client, url: str, headers: dict[str, str]) -> tuple[float, float]:
            start = time.perf_counter()
            first = None
            with http.stream("POST", url, json=body, headers=headers) as response:
                response.raise_for_status()
                for line in response.iter_lines():
                    if first is None and '"content":"' in line and '"content":""' not in line:
                        first = time.perf_counter()
                    if line == "data: [DONE]":
                        break
            end = time.perf_counter()
            return ((first or end) - start) * 1000, (end - start) * 1000

        results: dict[str, list[tuple[float, float]]] = {"direct": [], "nexus": []}
        targets = {
            "direct": (f"{fake.url}/v1/chat/completions", {}),
            "nexus": (f"{nexus_url}/v1/chat/completions", nexus_headers),
        }
        with httpx.Client(timeout=30) as http:
            for _ in range(10):  # warm-up: connections, caches, the first queries
                for url, headers in targets.values():
                    turn(http, url, headers)
            for n in range(args.runs):
                order = ["direct", "nexus"] if n % 2 == 0 else ["nexus", "direct"]
                for name in order:
                    results[name].append(turn(http, *targets[name]))
        server.shutdown()

    def stats(values: list[float]) -> tuple[float, float]:
        return statistics.median(values), statistics.quantiles(values, n=10)[-1]

    print(
        f"openai_overhead: {args.runs} streamed turns each, alternating; session ends with {session.episodes.count()} episodes"
    )
    print(f"{'':8} {'ttft p50':>9} {'ttft p90':>9} {'total p50':>10} {'total p90':>10}  (ms)")
    medians = {}
    for name, samples in results.items():
        ttft, total = stats([s[0] for s in samples]), stats([s[1] for s in samples])
        medians[name] = (ttft[0], total[0])
        print(f"{name:8} {ttft[0]:9.2f} {ttft[1]:9.2f} {total[0]:10.2f} {total[1]:10.2f}")
    added_ttft = medians["nexus"][0] - medians["direct"][0]
    added_total = medians["nexus"][1] - medians["direct"][1]
    verdict = "within" if added_total < 15 else "over"
    print(
        f"added at the median: time to first token {added_ttft:.2f} ms, total {added_total:.2f} ms ({verdict} the 15 ms goal)"
    )


if __name__ == "__main__":
    main()

"""How many utility-model calls, and how many input tokens, does summarization
spend per 100 exchanges at the default settings?

100 exchanges of varied length (questions of 8-40 words, replies of 40-220
words, then a second set with replies of 20-100 words; a fixed random seed) are written one by one through the real write
path: post_save -> after commit -> gate -> task (in process, no broker) ->
policy -> HTTP to a fake model. Two runs:

- ``fake server``: the fake Ollama server of the test suite, whose answers
  are one short sentence;
- ``3-5 sentence answers``: the same fake server behind a client that pads
  each answer to about ``--summary-words`` words, the length the summarization
  prompt asks for, because a cumulative update carries the previous summary
  and its length drives the input cost.

Input tokens are the cl100k tokens of every prompt sent; "episode tokens"
the tokens of the 100 exchanges. Goals: at most 45 calls, at most 1.5 input
tokens per episode token. ``fewest_possible_calls`` is the floor the
3000-character cap sets for the episodes that were summarized (whole
episodes, oldest first; the tail the gate leaves for later is not counted): with
long replies the cap, not the policy, decides the count.

    .venv/bin/python bench/summarization_calls.py [--exchanges 100] [--summary-words 90]

``BENCH_DATABASE_URL`` picks the database (default ``nexus_sum_bench``).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

os.environ.setdefault("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/nexus_sum_bench")

from bench.support import setup_django  # noqa: E402

# No broker: the task runs in process right after each commit, as on one machine.
setup_django(CELERY_BROKER_URL="", INFERENCE_BACKEND="ollama", LOG_LEVEL="WARNING")

from django.contrib.auth import get_user_model  # noqa: E402
from django.test.utils import override_settings  # noqa: E402

from sessions_app.models import ChatSession  # noqa: E402
from sessions_app.services import episode_create  # noqa: E402
from sessions_app.tokens import count_tokens  # noqa: E402
from summaries.inference import Completion, get_client, register_backend, unregister_backend  # noqa: E402
from summaries.models import Summary  # noqa: E402
from summaries.selectors import pending_episode_count  # noqa: E402
from tests.fake_model_server import FakeModelServer  # noqa: E402

WORDS = (
    "model context summary session token budget reply question answer memory window prompt "
    "episode cache latency throughput index database worker queue retry backoff policy range "
    "curated revision digest history detail example reason result plan test deploy review"
).split()


def sentence(rng: random.Random, words: int) -> str:
    body = " ".join(rng.choice(WORDS) for _ in range(words))
    return body[0].upper() + body[1:] + "."


REPLY_WORDS = {"long": (40, 220), "short": (20, 100)}


def exchanges(n: int, size: str = "long", seed: int = 7) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    out = []
    low, high = REPLY_WORDS[size]
    for _ in range(n):
        question = sentence(rng, rng.randint(8, 40)).rstrip(".") + "?"
        reply_words = rng.randint(low, high)
        reply = " ".join(sentence(rng, 12) for _ in range(max(1, reply_words // 12)))
        out.append((question, reply))
    return out


class LongAnswers:
    """The fake server's answer, padded to a 3-5 sentence summary's length."""

    def __init__(self, words: int) -> None:
        self.inner = get_client("ollama")
        self.words = words

    def complete(self, prompt: str, **kwargs) -> Completion:  # type: ignore[no-untyped-def]
        c = self.inner.complete(prompt, **kwargs)
        rng = random.Random(c.text)
        text = c.text + " " + " ".join(sentence(rng, 15) for _ in range(max(1, self.words // 15)))
        return Completion(text, c.model, c.prompt_tokens, count_tokens(text), c.duration_ms)


def fewest_calls(pairs: list[tuple[str, str]], cap: int) -> int:
    """The fewest calls any policy could make: whole episodes, oldest first,
    each call's formatted text within ``cap`` (greedy is optimal for that)."""
    from summaries.prompts import EXCHANGE_SEPARATOR, format_exchange

    calls, length = 0, None
    for user, reply in pairs:
        size = len(format_exchange(user, reply))
        if length is None or length + len(EXCHANGE_SEPARATOR) + size > cap:
            calls, length = calls + 1, size
        else:
            length += len(EXCHANGE_SEPARATOR) + size
    return calls


def run(label: str, n: int, server: FakeModelServer, wrap_words: int | None, size: str) -> None:
    from django.conf import settings

    user, _ = get_user_model().objects.get_or_create(username="bench-summaries")
    session = ChatSession.objects.create(owner=user, title=f"bench {label}")
    server.reset()
    backend = "ollama"
    if wrap_words:
        # The padded answers are a backend of their own, chosen like any other.
        client = LongAnswers(wrap_words)
        backend = "bench-long-answers"
        register_backend(backend, lambda: client)  # type: ignore[arg-type, return-value]
    try:
        with override_settings(INFERENCE_SERVICE_URL=server.url, INFERENCE_BACKEND=backend):
            for question, reply in exchanges(n, size):
                episode_create(session=session, user_input=question, response=reply)
    finally:
        if wrap_words:
            unregister_backend(backend)
    prompts = [r["body"]["messages"][0]["content"] for r in server.requests if r["path"] == "/api/chat"]
    session.refresh_from_db()
    episode_tokens = session.cached_total_tokens
    input_tokens = sum(count_tokens(p) for p in prompts)
    rows = Summary.objects.filter(session=session).count()
    pending = pending_episode_count(session.pk)
    print(
        f"{label:<24} calls={len(prompts):>3}  input_tokens={input_tokens:>6}  episode_tokens={episode_tokens:>6}  "
        f"input/episode={input_tokens / episode_tokens:.2f}  rows={rows}  "
        f"calls_per_100={len(prompts) * 100 / n:.1f}  unsummarized_tail={pending}  "
        f"fewest_possible_calls={fewest_calls(list(exchanges(n, size))[: n - pending], settings.SUMMARY_MAX_CHARS)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--exchanges", type=int, default=100)
    parser.add_argument("--summary-words", type=int, default=90)
    args = parser.parse_args()
    from django.conf import settings

    print(
        f"seed defaults: threshold={settings.SUMMARY_THRESHOLD_TOKENS} min_episodes={settings.SUMMARY_MIN_EPISODES} "
        f"max_tokens={settings.SUMMARY_MAX_TOKENS} max_chars={settings.SUMMARY_MAX_CHARS}; "
        f"{args.exchanges} exchanges; goals: <=45 calls per 100, <=1.5 input tokens per episode token"
    )
    with FakeModelServer() as server:
        for size in ("long", "short"):
            words = REPLY_WORDS[size]
            print(f"-- replies of {words[0]}-{words[1]} words")
            run("fake server", args.exchanges, server, None, size)
            run(f"{args.summary_words}-word answers", args.exchanges, server, args.summary_words, size)


if __name__ == "__main__":
    main()

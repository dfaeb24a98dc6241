"""What passage vectors over the whole text cost: bytes stored per episode and encoder time.

An episode is stored as its whole exchange's vector and one vector per
passage (sessions_app.semantic.passages), ``VECTOR_BYTES`` each (384 int8
values and their scale) plus 8 bytes for each passage's span. Printed for
the exchanges of the assistant-shaped set (bench/recall_assistant.py, seed
7) near 1,000 tokens (a typical assistant exchange) and for short ones (the
synthetic set's, about 100 tokens), beside the older layout (passages of the
first 2,000 characters of each side, 8 vectors at most); then the encoder's time per 1,000 tokens
of text, on one core as a worker runs it, and what the tokens-per-episode
cap leaves out of the set's exchanges at a few settings.

    .venv/bin/python bench/passage_vectors.py [--exchanges 160] [--repeat 3]

No database is needed. Figures: bench/README.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.support import setup_django_offline  # noqa: E402

setup_django_offline()

from django.conf import settings  # noqa: E402

from bench import recall_assistant, recall_synthetic  # noqa: E402
from sessions_app.semantic.encoder import encoder  # noqa: E402
from sessions_app.semantic.passages import episode_encoding, older_layout  # noqa: E402
from sessions_app.semantic.vectors import VECTOR_BYTES  # noqa: E402
from sessions_app.tokens import count_tokens  # noqa: E402

SPAN_BYTES = 8
CAPS = (500, 1000, 2000, 4000)


def stored_bytes(user_input: str, response: str) -> int:
    encoding = episode_encoding(user_input, response)
    return len(encoding.texts) * VECTOR_BYTES + len(encoding.spans) * SPAN_BYTES


def older_bytes(user_input: str, response: str) -> int:
    return len(older_layout(user_input, response)) * VECTOR_BYTES


def tokens_of(exchange) -> int:
    return count_tokens(exchange.user_input) + count_tokens(exchange.response)


def row(label: str, exchanges: list) -> str:
    tokens = statistics.mean(tokens_of(e) for e in exchanges)
    new = statistics.mean(stored_bytes(e.user_input, e.response) for e in exchanges)
    vectors = statistics.mean(len(episode_encoding(e.user_input, e.response).texts) for e in exchanges)
    old = statistics.mean(older_bytes(e.user_input, e.response) for e in exchanges)
    return (
        f"| {label} ({len(exchanges)}) | {tokens:,.0f} | {vectors:.1f} | {new:,.0f} | {old:,.0f} "
        f"| {new / max(tokens, 1) * 1000:,.0f} |"
    )


def encoding_seconds(texts_per_episode: list[list[str]], repeat: int) -> tuple[float, float]:
    """The best of ``repeat`` runs encoding every episode's texts, 16
    episodes a call as the task does: (CPU seconds, wall seconds). The
    encoder runs on the calling thread, so its CPU time is what a worker
    spends, however busy the machine is; wall time moves with the load."""
    cpu = wall = float("inf")
    for _ in range(repeat):
        started, started_cpu = time.perf_counter(), time.process_time()
        for at in range(0, len(texts_per_episode), 16):
            encoder().encode([text for texts in texts_per_episode[at : at + 16] for text in texts])
        cpu = min(cpu, time.process_time() - started_cpu)
        wall = min(wall, time.perf_counter() - started)
    return cpu, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exchanges", type=int, default=160, help="of the assistant-shaped conversation")
    parser.add_argument("--repeat", type=int, default=3, help="encoding runs; the best is kept")
    args = parser.parse_args()

    assistant = recall_assistant.make_conversations(7, 1, args.exchanges)[0].exchanges
    short = recall_synthetic.make_conversations(7, 1, 320)[0].exchanges
    typical = [e for e in assistant if 800 <= tokens_of(e) <= 1200]
    cap = settings.SEMANTIC_PASSAGE_TOKENS_PER_EPISODE
    print(f"SEMANTIC_PASSAGE_TOKENS_PER_EPISODE = {cap}; {VECTOR_BYTES} bytes a vector, 8 a span")
    print()
    print("| exchanges | tokens | vectors | bytes stored | older layout | bytes per 1,000 tokens |")
    print("|---|---|---|---|---|---|")
    print(row("assistant, 800 to 1,200 tokens", typical))
    print(row("assistant, all", assistant))
    print(row("synthetic (short)", short))
    longest = max(assistant, key=tokens_of)
    print(
        f"| the longest ({tokens_of(longest):,} tokens) | | "
        f"{len(episode_encoding(longest.user_input, longest.response).texts)} "
        f"| {stored_bytes(longest.user_input, longest.response):,} "
        f"| {older_bytes(longest.user_input, longest.response):,} | |"
    )
    print()

    encoder().encode(["warm up"])
    sample = assistant[:40]
    tokens = sum(tokens_of(e) for e in sample)
    now = [episode_encoding(e.user_input, e.response).texts for e in sample]
    before = [older_layout(e.user_input, e.response) for e in sample]
    print(f"Encoding {len(sample)} assistant exchanges ({tokens:,} tokens), one core, best of {args.repeat}:")
    for label, texts in (("whole text", now), ("older layout", before)):
        cpu, wall = encoding_seconds(texts, args.repeat)
        print(
            f"  {label}: {cpu * 1000 / tokens * 1000:,.0f} ms CPU per 1,000 tokens "
            f"({wall * 1000 / tokens * 1000:,.0f} ms wall; {sum(map(len, texts)):,} vectors, "
            f"{len(sample) / cpu:.1f} episodes per CPU second)"
        )
    print()
    print("Share of the assistant exchanges' passage text encoded, by cap:")
    for each in CAPS:
        covered = total = 0
        whole = 0
        for e in assistant:
            spans = episode_encoding(e.user_input, e.response, tokens=each).spans
            every_one = episode_encoding(e.user_input, e.response, tokens=10**9).spans
            covered += sum(end - start for start, end in spans)
            total += sum(end - start for start, end in every_one)
            whole += spans == every_one
        print(
            f"  {each:>5,} tokens: {covered / total:.3f} of the text, {whole}/{len(assistant)} exchanges whole"
        )


if __name__ == "__main__":
    main()

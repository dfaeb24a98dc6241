"""What evidence do the exchanges retrieval ranks carry, for questions that
need memory and for messages that need none?

For each conversation of ``bench/memory_recall.py``'s sets (replayed there
first: this reads its database), every question and every small-talk
message is ranked as the context ranks it; for each ranked exchange it
prints nothing, but gathers its closeness in meaning (``Closeness.similarity``,
absolute) and its words' BM25 score. Then, for a grid of floors, how many
questions keep at least one ranked exchange holding an answer word above
the floor, and how many small-talk messages keep any exchange.

    .venv/bin/python bench/relevance_evidence.py [--sqlite PATH] [--database postgres]
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.memory_recall import SETS, SMALL_TALK  # noqa: E402
from bench.recall_replay import SQLITE_PATH, setup, title_of  # noqa: E402
from bench.recall_scoring import recall  # noqa: E402

MEANING_FLOORS = (0.0, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45)
WORDS_FLOORS = (0.0, 2.0, 4.0, 6.0, 8.0)


def evidence(session, text: str, window: int) -> list[tuple[int, float, float]]:
    """(episode id, similarity, BM25) of each exchange ranked for ``text`` outside the window."""
    from django.conf import settings

    from sessions_app import semantic
    from sessions_app.models import Episode
    from sessions_app.retrieval import begin_ranking

    recent = list(
        Episode.objects.filter(session=session).order_by("-pk").values_list("pk", flat=True)[:window]
    )
    pending = begin_ranking(session=session, question=text, limit=48)
    hits = pending.hits(recent)
    words = {hit.episode_id: hit.score for hit in pending.ranking.hits(recent)} if pending.ranking else {}
    closeness = semantic.closeness(
        session_pk=session.pk,
        newest_episode_id=session.cached_last_episode_id,
        vector=pending.vector.result(),
        scan=settings.CONTEXT_SEMANTIC_CANDIDATES,
        exclude_ids=recent,
    )
    near = {n.episode_id: n.similarity for n in closeness.nearest(len(closeness.ids))}
    return [(h.episode_id, near.get(h.episode_id, 0.0), words.get(h.episode_id, 0.0)) for h in hits]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--sqlite", default=SQLITE_PATH)
    parser.add_argument("--sets", nargs="+", default=sorted(SETS))
    args = parser.parse_args()
    setup(args.database, args.sqlite)
    from django.conf import settings

    from sessions_app.models import ChatSession, Episode

    window = 2  # the window's share keeps about this many exchanges of a long conversation
    for name in args.sets:
        probe = SETS[name]
        conversations = probe.make(7, 4, probe.exchanges)
        asked: list[list[tuple[float, float, bool]]] = []
        talk: list[list[tuple[float, float]]] = []
        for conversation in conversations:
            session = ChatSession.objects.filter(title=title_of(conversation)).first()
            if session is None:
                print(f"{name}: {conversation.key} not replayed; run bench/memory_recall.py --set {name}")
                continue
            texts = dict(
                Episode.objects.filter(session=session).values_list("pk", "user_input")
            )
            replies = dict(Episode.objects.filter(session=session).values_list("pk", "response"))
            for question in conversation.questions:
                found = evidence(session, question.text, window)
                asked.append(
                    [(sim, bm25, recall(question, texts[pk] + " " + replies[pk]) > 0) for pk, sim, bm25 in found]
                )
            for message in SMALL_TALK:
                talk.append([(sim, bm25) for _, sim, bm25 in evidence(session, message, window)])
        report(name, asked, talk)
    del settings


def report(name: str, asked: Sequence[list[tuple[float, float, bool]]], talk: Sequence[list[tuple[float, float]]]) -> None:
    print(f"\n{name}: {len(asked)} questions, {len(talk)} small-talk messages")
    print("gate (meaning, words): questions with an answering exchange whose best exchange passes /"
          " small talk passing / exchanges passing per question")
    for meaning in MEANING_FLOORS:
        for words in WORDS_FLOORS:
            def passes(sim: float, bm25: float) -> bool:
                return sim >= meaning or (words > 0 and bm25 >= words)

            kept = sum(
                any(passes(s, b) for s, b, _ in found) and any(useful for _, _, useful in found) for found in asked
            )
            noisy = sum(any(passes(s, b) for s, b in found) for found in talk)
            per = sum(sum(passes(s, b) for s, b, _ in found) for found in asked) / max(len(asked), 1)
            print(f"  {meaning:.2f} / {words:>4.1f}: {kept:>3} / {len(asked)}   {noisy:>3} / {len(talk)}   {per:5.1f}")


if __name__ == "__main__":
    main()

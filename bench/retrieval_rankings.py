"""Which ranking of earlier exchanges keeps the most: words, meaning, or both?

The conversations of bench/memory_recall.py (``--set synthetic``:
bench/recall_synthetic.py, or ``--set dialogue``: bench/recall_dialogue.py),
without the API: for every question, each ranking orders all the conversation's
exchanges, the best are taken, oldest first with their dates, as many as fit
the budget (the same ``fit``, ``render`` and ``recall`` as memory_recall.py),
and the answer words found are averaged. Rankings:

- words: BM25 over the exchanges (memory_recall.py's);
- meaning, whole exchange: cosine of the production encoder's vector of the
  whole exchange (what Nexus stored before passages);
- meaning: as Nexus ranks now, with passages (sessions_app.semantic.passages:
  the whole exchange and passages of a few sentences of each side): the mean
  of the whole exchange's closeness and its closest vector's;
- rank fusion: reciprocal rank fusion (K 60) of meaning with the words' list
  at weight 0.5, as Nexus fused them before;
- score sum: as sessions_app.retrieval fuses them, an exchange's closeness
  in standard deviations above the conversation's mean plus its BM25 score
  times 0.6, 0.8 or 1.0;
- score sum, common words out: weight 0.8, closeness to the question less
  the words a tenth of the exchanges (at least 10) hold, stop words kept, as
  Nexus compares meaning now (sessions_app.search.Ranking.without_common_words);
- varied: that score sum, the exchanges chosen one at a time so that they do
  not repeat each other (sessions_app.semantic.variety), as Nexus chooses.

Two kinds of question: as the sets ask them (in other words than the fact
was told), and with ``--literal`` each also naming the rarest word of the
first exchange that answers it (not an answer word), as questions that reuse
the conversation's words do ("when did I go to the LGBTQ support group?").
Date questions are left out of ``--literal``: their answer is an exchange's
date, not a word in it.

This is how the weights of sessions_app.retrieval were chosen; the held-out
benchmark decides, not these sets, so a change should hold on both sets, both
kinds of question and more than one seed.

    .venv/bin/python bench/retrieval_rankings.py [--set synthetic|dialogue|assistant] [--literal]
        [--conversations 4] [--exchanges N] [--seed 7]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "nexus.settings")
os.environ.setdefault("DJANGO_DEBUG", "1")

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402

from bench.memory_recall import SETS  # noqa: E402
from bench.recall_scoring import Bm25, dated_pair, fit, literal, recall, render, terms  # noqa: E402
from sessions_app.semantic.encoder import encoder  # noqa: E402
from sessions_app.semantic.passages import episode_texts  # noqa: E402
from sessions_app.semantic.variety import varied  # noqa: E402
from sessions_app.tokens import count_tokens  # noqa: E402

K = 60
RANK_WORDS_WEIGHT = 0.5
SCORE_WORDS_WEIGHTS = (0.6, 0.8, 1.0)
NEXUS_WORDS_WEIGHT = 0.8
# A word is common when this share of the exchanges, and at least this many, hold it.
COMMON_SHARE, COMMON_EPISODES = 0.1, 10
# Exchanges chosen one by one for the varied row: more than the largest budget holds.
VARIED_DEPTH = 80


def fused(by_meaning: list[int], by_words: list[int], words_weight: float) -> list[int]:
    scores: dict[int, float] = {}
    for rank, index in enumerate(by_words):
        scores[index] = words_weight / (K + rank)
    for rank, index in enumerate(by_meaning):
        scores[index] = scores.get(index, 0.0) + 1.0 / (K + rank)
    return sorted(scores, key=lambda i: (-scores[i], -i))


def fused_scores(meaning: np.ndarray, bm25: np.ndarray, words_weight: float) -> np.ndarray:
    """sessions_app.retrieval.fuse's scores over every exchange: standing plus weighted BM25."""
    return (meaning - meaning.mean()) / (meaning.std() or 1.0) + words_weight * bm25


def summed(meaning: np.ndarray, bm25: np.ndarray, words_weight: float) -> list[int]:
    return [int(i) for i in np.argsort(-fused_scores(meaning, bm25, words_weight), kind="stable")]


def chosen_varied(meaning: np.ndarray, bm25: np.ndarray, whole: np.ndarray, depth: int) -> list[int]:
    """``summed`` at weight 0.8, its first ``depth`` chosen as sessions_app.retrieval
    chooses them (``varied``), the rest after them in order."""
    scores = fused_scores(meaning, bm25, NEXUS_WORDS_WEIGHT)
    order = np.argsort(-scores, kind="stable")
    first = [int(order[i]) for i in varied(scores[order], whole[order], depth)]
    taken = set(first)
    return first + [int(i) for i in order if int(i) not in taken]


def closeness(
    text: str, vectors: np.ndarray, owners: np.ndarray, whole: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each exchange's cosine to ``text`` by its whole vector, and as
    sessions_app.semantic.neighbours scores: the mean of the whole exchange's
    and its closest vector's (``vectors`` of every exchange, ``owners`` saying whose)."""
    asked_vector = encoder().encode([text])[0]
    closest = np.full(len(whole), -np.inf)
    np.maximum.at(closest, owners, vectors @ asked_vector)
    by_whole = whole @ asked_vector
    return by_whole, (by_whole + closest) / 2


def without_common_words(question: str, bm25: Bm25) -> str:
    """The question less its words that many exchanges hold (stop words stay);
    the whole question when no other word is left."""
    least = max(COMMON_SHARE * len(bm25.documents), COMMON_EPISODES)
    kept, content = [], False
    for word in question.split():
        found = terms(word)
        if found and all(bm25.document_frequency[t] >= least for t in found):
            continue
        kept.append(word)
        content = content or bool(found)
    return " ".join(kept) if content else question


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=sorted(SETS), default="synthetic", help="the conversations to rank")
    parser.add_argument("--conversations", type=int, default=4)
    parser.add_argument("--exchanges", type=int, help="per conversation (default: the set's)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--literal", action="store_true", help="questions that also name a word of the answer"
    )
    args = parser.parse_args()

    results: dict[tuple[str, int], list[float]] = {}
    started = time.perf_counter()
    probe = SETS[args.set]
    budgets = probe.budgets
    for conversation in probe.make(args.seed, args.conversations, args.exchanges or probe.exchanges):
        exchanges = conversation.exchanges
        texts = [episode_texts(e.user_input, e.response) for e in exchanges]
        owners = np.repeat(np.arange(len(texts)), [len(t) for t in texts])
        vectors = encoder().encode([text for episode in texts for text in episode])
        whole = vectors[np.r_[0, np.cumsum([len(t) for t in texts])[:-1]]]
        tokens = [count_tokens(dated_pair(e)) for e in exchanges]
        bm25 = Bm25.over(exchanges)
        questions = literal(conversation) if args.literal else conversation.questions
        for question in questions:
            whole_closeness, meaning = closeness(question.text, vectors, owners, whole)
            by_whole = [int(i) for i in np.argsort(-whole_closeness, kind="stable")]
            by_meaning = [int(i) for i in np.argsort(-meaning, kind="stable")]
            # Only exchanges holding a word of the question, as the index returns them.
            asked = set(terms(question.text))
            by_words = [i for i in bm25.ranking(question.text) if bm25.documents[i].keys() & asked]
            word_scores = np.array(bm25.scores(question.text))
            rankings = {
                "words (BM25)": bm25.ranking(question.text),
                "meaning, whole exchange": by_whole,
                "meaning": by_meaning,
                f"rank fusion, words {RANK_WORDS_WEIGHT:g}": fused(by_meaning, by_words, RANK_WORDS_WEIGHT),
            }
            for weight in SCORE_WORDS_WEIGHTS:
                rankings[f"score sum, words {weight:g}"] = summed(meaning, word_scores, weight)
            _, uncommon = closeness(without_common_words(question.text, bm25), vectors, owners, whole)
            rankings["score sum, common out"] = summed(uncommon, word_scores, NEXUS_WORDS_WEIGHT)
            rankings["... common out, varied"] = chosen_varied(uncommon, word_scores, whole, VARIED_DEPTH)
            for name, ranking in rankings.items():
                for budget in budgets:
                    chosen = fit(question.text, ranking, tokens, budget)
                    context = render(question.text, [exchanges[i] for i in sorted(chosen)])
                    results.setdefault((name, budget), []).append(recall(question, context))

    kind = "literal questions" if args.literal else "questions as asked"
    print(f"answer words found, ranking alone, {args.set} set, seed {args.seed}, {kind}", end="")
    print(f" ({len(results[(name, budgets[0])])} of them, {time.perf_counter() - started:.0f} s)")
    print(f"{'ranking':<26}" + "".join(f"{b:>8,}" for b in budgets))
    for name in dict.fromkeys(name for name, _ in results):
        print(f"{name:<26}" + "".join(f"{np.mean(results[(name, b)]):>8.2f}" for b in budgets))


if __name__ == "__main__":
    main()

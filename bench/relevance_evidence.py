"""What evidence do the passages of the exchanges retrieval ranks carry,
for questions that need memory and for messages that need none?

For each conversation of ``bench/memory_recall.py``'s sets (replayed there
first: this reads its database), every question and every small-talk
message is ranked as the context ranks it (outside a two-exchange window),
and every passage of every ranked exchange gets the evidence the context
weighs (``sessions_app.excerpts.passage_evidence``): its cosine to the
question and the idf of the question's terms it holds, put together as
``sessions_app.relevance.of`` does (a short exchange also judged whole).
For a grid of floors it prints how many questions keep a passage holding an
answer word that clears the floor, how many have any passage that clears
it, and how many small-talk messages do; and how many of each the
small-talk test (``sessions_app.semantic.small_talk``) takes for small talk.

    .venv/bin/python bench/relevance_evidence.py [--sets assistant dialogue] [--sqlite PATH]
        [--database postgres]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.memory_recall import SETS, SMALL_TALK  # noqa: E402
from bench.recall_replay import SQLITE_PATH, setup, title_of  # noqa: E402
from bench.recall_scoring import recall  # noqa: E402

FLOORS = (0.0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5)
WINDOW = 2  # the window's share keeps about this many exchanges of a long conversation


def evidence(session, text: str, depth: int) -> tuple[list[tuple[float, str]], bool]:
    """(relevance, text) of each passage of the exchanges ranked for ``text``
    outside the window, and whether ``text`` is taken for small talk."""
    from django.conf import settings

    from sessions_app import relevance, semantic
    from sessions_app.excerpts import Text, passage_evidence
    from sessions_app.models import Episode
    from sessions_app.retrieval import begin_ranking, meaning_text
    from sessions_app.semantic.small_talk import is_small_talk
    from summaries.context import sources

    newest = Episode.objects.filter(session=session).order_by("-pk").values_list("pk", flat=True)
    recent = list(newest[:WINDOW])
    pending = begin_ranking(session=session, question=text, limit=depth)
    hits = pending.hits(recent)
    texts = sources.episode_texts(session.pk, [hit.episode_id for hit in hits])
    ranking = pending.ranking
    vector = pending.vector.result()
    found = passage_evidence(
        texts=[Text(pk, ex.user_input, ex.response) for pk, (ex, _) in texts.items()],
        terms=tuple(ranking.terms) if ranking else (),
        idf=ranking.idf if ranking else {},
        vector=vector,
        sizes={hit.episode_id: hit.token_count for hit in hits},
    )
    rows = []
    for hit in hits:
        if hit.episode_id not in texts:
            continue
        exchange = texts[hit.episode_id][0]
        whole = exchange.user_input + exchange.response
        short = hit.token_count <= settings.CONTEXT_PASSAGE_TOKENS
        for passage in found[hit.episode_id]:
            score = relevance.of(passage.closeness, passage.words)
            if short and passage.exchange_closeness is not None:
                score = max(score, relevance.of(passage.exchange_closeness, passage.words))
            rows.append((score, whole[passage.start : passage.end]))
    asked = vector if meaning_text(text, ranking) == text else semantic.question_vector(text)
    return rows, is_small_talk(text, asked)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--sqlite", default=SQLITE_PATH)
    parser.add_argument("--sets", nargs="+", default=sorted(SETS))
    args = parser.parse_args()
    setup(args.database, args.sqlite)
    from sessions_app.models import ChatSession
    from summaries.context import RETRIEVED_LABEL_TOKENS, sources

    for name in args.sets:
        probe = SETS[name]
        conversations = probe.make(7, 4, probe.exchanges)
        asked: list[tuple[list[float], list[float], bool]] = []
        talk: list[tuple[list[float], bool]] = []
        for conversation in conversations:
            session = ChatSession.objects.filter(title=title_of(conversation)).first()
            if session is None:
                print(f"{name}: {conversation.key} not replayed; run bench/memory_recall.py --set {name}")
                continue
            depth = sources.retrieval_depth(session, probe.budgets[1], RETRIEVED_LABEL_TOKENS)
            for question in conversation.questions:
                rows, gated = evidence(session, question.text, depth)
                answering = [score for score, text in rows if recall(question, text) > 0]
                asked.append(([score for score, _ in rows], answering, gated))
            for message in SMALL_TALK:
                rows, gated = evidence(session, message, depth)
                talk.append(([score for score, _ in rows], gated))
        report(name, asked, talk)


def report(
    name: str, asked: list[tuple[list[float], list[float], bool]], talk: list[tuple[list[float], bool]]
) -> None:
    answerable = sum(bool(answering) for _, answering, _ in asked)
    print(f"\n{name}: {len(asked)} questions ({answerable} with a passage holding an answer word), "
          f"{len(talk)} small-talk messages")
    print(f"  taken for small talk: questions {sum(g for *_, g in asked)} / {len(asked)}, "
          f"small talk {sum(g for _, g in talk)} / {len(talk)}")
    print("  floor: answering passage clears / any passage clears / small talk with a passage that clears"
          " / passages clearing per question")
    for floor in FLOORS:
        kept = sum(any(s >= floor for s in answering) for _, answering, _ in asked)
        anything = sum(any(s >= floor for s in scores) for scores, _, _ in asked)
        noisy = sum(any(s >= floor for s in scores) for scores, _ in talk)
        per = sum(sum(s >= floor for s in scores) for scores, _, _ in asked) / max(len(asked), 1)
        print(f"  {floor:4.2f}: {kept:>3} / {answerable}   {anything:>3} / {len(asked)}   "
              f"{noisy:>3} / {len(talk)}   {per:6.1f}")


if __name__ == "__main__":
    main()

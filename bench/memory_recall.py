"""How much of what the user told Nexus does the context still hold, and at what cost in tokens?

Long dated conversations with planted facts (some changed later, with
distractors, asked about at the end in other words) from one of three sets,
replayed through the API (bench/recall_replay.py):

- ``synthetic`` (bench/recall_synthetic.py): a user tells an assistant short
  facts, one to a turn, with short replies; 320 exchanges by default;
- ``dialogue`` (bench/recall_dialogue.py): two friends chatting, and a user
  with an assistant whose answers run to a few hundred words; 320 exchanges;
- ``assistant`` (bench/recall_assistant.py): a person building a software
  project with a coding assistant over months, about 100,000 tokens in 160
  exchanges, replies of hundreds to a couple of thousand tokens; questions
  on facts, updated facts, dates, ordering and standing instructions.

Every question is put to five contexts at three budgets (1,000 / 2,000 /
4,000 tokens; 2,000 / 4,000 / 8,000 for ``assistant``): full history (no
budget), the newest exchanges that fit, BM25 top-k of whole exchanges,
BM25 top-k of passages (bench/recall_scoring.py), and Nexus (the ``prompt``
of ``GET /api/sessions/{uuid}/context/?question=&budget=``). Prints answer-word
recall and mean tokens of each, a breakdown by question type, and what
Nexus's context costs for five messages that need no memory, beside the
recent window's tokens. ``--literal`` asks the non-date questions again,
each also naming the rarest word of the exchange that answers it.

    .venv/bin/python bench/memory_recall.py [--set synthetic|dialogue|assistant] [--literal]
        [--database sqlite|postgres] [--sqlite PATH] [--conversations 4] [--exchanges N]
        [--seed 7] [--fresh] [--hash] [--dated] [--tune MODULE.NAME=VALUE]

``--dated`` asks the non-date questions again, each also saying when its
fact was told (bench/recall_dated.py), the day after the conversation;
every question is asked with that ``asked_at``. ``--tune`` sets a ranking
constant for the run, to measure another value side by side.

SQLite uses ``--sqlite`` (default /tmp/nexus_recall.sqlite3), PostgreSQL
``BENCH_DATABASE_URL`` (default ``nexus_recall_bench``, created if missing).
Sessions already replayed with the same conversations (their hash is in
the title) are reused; ``--fresh`` replays them. ``--hash`` prints the
conversations' hash and stops. Figures: bench/README.md.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import statistics
import sys
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# WhiteNoise looks for collected static files, which a benchmark does not build.
warnings.filterwarnings("ignore", "No directory at", UserWarning)
sys.path.insert(0, str(ROOT))

from bench import recall_assistant, recall_dated, recall_dialogue, recall_synthetic  # noqa: E402
from bench.recall_data import KINDS, Conversation, Exchange, Question, fingerprint  # noqa: E402
from bench.recall_replay import SQLITE_PATH, Api, Replay, expect, session_for, setup  # noqa: E402
from bench.recall_scoring import (  # noqa: E402
    Bm25,
    dated_pair,
    fit,
    literal,
    passages,
    quote_passages,
    recall,
    render,
)
from sessions_app.tokens import count_tokens  # noqa: E402  (tiktoken only: no Django needed)

BREAKDOWN_BUDGET = 2000
GOAL = 0.9
METHODS = ("buffer", "BM25 top-k", "BM25 passages", "Nexus")
BM25_METHODS = ("BM25 top-k", "BM25 passages")
#: Messages that need no memory: their context should cost about the recent window.
SMALL_TALK = ("Thanks!", "ok", "good night", "great, that worked", "see you tomorrow")


@dataclass(frozen=True, slots=True)
class ProbeSet:
    make: Callable[[int, int, int], list[Conversation]]  # (seed, count, exchanges) -> conversations
    budgets: tuple[int, int, int]
    exchanges: int  # per conversation, by default


SETS = {
    "synthetic": ProbeSet(recall_synthetic.make_conversations, (1000, 2000, 4000), 320),
    "dialogue": ProbeSet(recall_dialogue.make_conversations, (1000, 2000, 4000), 320),
    "assistant": ProbeSet(recall_assistant.make_conversations, (2000, 4000, 8000), 160),
}


@dataclass
class Score:
    tokens: int
    recall: float


@dataclass
class Results:
    """Scores by (method, budget), each with its question's kind and its
    conversation's shape; budget None for full history. ``small_talk``:
    Nexus's tokens by budget for messages that need no memory, ``window``
    the recent window's tokens for the same messages."""

    scores: dict[tuple[str, int | None], list[tuple[str, str, Score]]] = field(default_factory=dict)
    rejected: Counter[int] = field(default_factory=Counter)  # budget -> 400 answers
    over_budget: Counter[int] = field(default_factory=Counter)
    small_talk: dict[int, list[int]] = field(default_factory=dict)
    window: list[int] = field(default_factory=list)

    def add(self, method: str, budget: int | None, kind: str, shape: str, score: Score) -> None:
        self.scores.setdefault((method, budget), []).append((kind, shape, score))

    def mean(
        self, method: str, budget: int | None, kind: str | None = None, shape: str | None = None
    ) -> tuple[float, float]:
        rows = [
            s
            for k, sh, s in self.scores[(method, budget)]
            if (kind is None or k == kind) and (shape is None or sh == shape)
        ]
        return statistics.fmean(s.tokens for s in rows), statistics.fmean(s.recall for s in rows)


def context(api: Api, uuid: str, question: str, budget: int, asked: str | None = None) -> tuple[int, dict]:
    query = {"question": question, "budget": budget} | ({"asked_at": asked} if asked else {})
    return api.get(f"/api/sessions/{uuid}/context/", query)


def nexus_score(
    api: Api, uuid: str, question: Question, budget: int, results: Results, asked: str | None = None
) -> Score:
    status, body = context(api, uuid, question.text, budget, asked)
    if status == 400:
        results.rejected[budget] += 1
        return Score(0, 0.0)
    expect(status, body, 200, "GET context")
    if body["token_count"] > budget:
        results.over_budget[budget] += 1
    return Score(body["token_count"], recall(question, body["prompt"]))


def shape_of(conversation: Conversation) -> str:
    """ "dialogue (friends)" of the key "dialogue (friends), seed 7 #1 n=320"."""
    return conversation.key.split(", seed")[0] if ", seed" in conversation.key else "synthetic"


def evaluate(
    api: Api, uuid: str, conversation: Conversation, budgets: Sequence[int], results: Results
) -> None:
    exchanges = conversation.exchanges
    shape = shape_of(conversation)
    pair_tokens = [count_tokens(dated_pair(e)) for e in exchanges]
    cut = passages(exchanges)
    passage_tokens = [count_tokens(p.quoted) for p in cut]
    newest_first = list(range(len(exchanges) - 1, -1, -1))
    index, passage_index = Bm25.over(exchanges), Bm25.of([p.text for p in cut])
    asked = recall_dated.asked_at(conversation).isoformat()
    for question in conversation.questions:
        full = render(question.text, exchanges)
        results.add(
            "full history", None, question.kind, shape, Score(count_tokens(full), recall(question, full))
        )
        ranking, passage_ranking = index.ranking(question.text), passage_index.ranking(question.text)
        for budget in budgets:
            for method, order in (("buffer", newest_first), ("BM25 top-k", ranking)):
                chosen = sorted(fit(question.text, order, pair_tokens, budget))
                text = render(question.text, [exchanges[i] for i in chosen])
                results.add(
                    method, budget, question.kind, shape, Score(count_tokens(text), recall(question, text))
                )
            chosen = sorted(fit(question.text, passage_ranking, passage_tokens, budget))
            text = quote_passages(question.text, [cut[i] for i in chosen])
            score = Score(count_tokens(text), recall(question, text))
            results.add("BM25 passages", budget, question.kind, shape, score)
            results.add(
                "Nexus", budget, question.kind, shape,
                nexus_score(api, uuid, question, budget, results, asked),
            )  # fmt: skip


def recent_window_tokens(message: str, exchanges: Sequence[Exchange]) -> int:
    """The tokens of the last ``CONTEXT_RECENT_EPISODES`` exchanges in the
    seed's layout, asked ``message``: what a message that needs no memory
    should cost."""
    from django.conf import settings

    from summaries.context import layout

    recent = exchanges[-settings.CONTEXT_RECENT_EPISODES :]
    numbered = [layout.Exchange(i, e.user_input, e.response, i + 1) for i, e in enumerate(recent)]
    pairs = layout.format_pairs(numbered)
    header = layout.RECENT_HEADER if len(exchanges) > len(recent) else layout.PREVIOUS_HEADER
    sections = [layout.QUESTION_LABEL + message, f"{header}\n{pairs}", layout.INSTRUCTIONS]
    return count_tokens(layout.SECTION_SEPARATOR.join(sections))


def small_talk(
    api: Api, uuid: str, conversation: Conversation, budgets: Sequence[int], results: Results
) -> None:
    for message in SMALL_TALK:
        results.window.append(recent_window_tokens(message, conversation.exchanges))
        for budget in budgets:
            status, body = context(api, uuid, message, budget)
            expect(status, body, 200, "GET context")
            results.small_talk.setdefault(budget, []).append(body["token_count"])


# --- report ----------------------------------------------------------------------------


def database_label(url: str) -> str:
    return ("PostgreSQL" if url.startswith("postgres") else "SQLite") + f" ({url})"


def summary_rows(uuid: str) -> int:
    from summaries.models import Summary

    return Summary.objects.filter(session__uuid=uuid).count()


def print_report(results: Results, conversations: list[Conversation], budgets: Sequence[int]) -> None:
    print(f"\n{'budget':>7}  {'method':<13} {'mean tokens':>11} {'recall':>7}")
    tokens, full = results.mean("full history", None)
    print(f"{'-':>7}  {'full history':<13} {tokens:>11,.0f} {full:>7.2f}")
    for budget in budgets:
        for method in METHODS:
            tokens, value = results.mean(method, budget)
            note = ""
            if method == "Nexus" and results.over_budget[budget]:
                note += f"  ({results.over_budget[budget]} over budget)"
            if method == "Nexus" and results.rejected[budget]:
                note += f"  ({results.rejected[budget]} answered 400, counted 0)"
            print(f"{budget:>7,}  {method:<13} {tokens:>11,.0f} {value:>7.2f}{note}")

    talk = " / ".join(f"{statistics.fmean(results.small_talk[b]):,.0f}" for b in budgets)
    print(f"\nsmall talk ({', '.join(repr(m) for m in SMALL_TALK)}), mean tokens:")
    print(f"  Nexus at {' / '.join(f'{b:,}' for b in budgets)}: {talk}")
    window = statistics.fmean(results.window)
    print(f"  the recent window (the last exchanges in the seed's layout): {window:,.0f}")

    kinds = Counter(q.kind for c in conversations for q in c.questions)
    print(f"\nat {BREAKDOWN_BUDGET:,} tokens, by question type:")
    print(f"{'type':<13} {'questions':>9} {'BM25':>6} {'passages':>9} {'Nexus':>6}")
    for kind in (k for k in KINDS if kinds[k]):
        bm25, cut, nexus = (results.mean(m, BREAKDOWN_BUDGET, kind)[1] for m in (*BM25_METHODS, "Nexus"))
        print(f"{kind:<13} {kinds[kind]:>9} {bm25:>6.2f} {cut:>9.2f} {nexus:>6.2f}")

    shapes = sorted({shape_of(c) for c in conversations})
    if len(shapes) > 1:
        print("\nby conversation shape, recall at " + " / ".join(f"{b:,}" for b in budgets) + " tokens:")
        print(f"{'shape':<20} {'BM25':>16} {'BM25 passages':>16} {'Nexus':>16}")
        for shape in shapes:
            row = (
                " / ".join(f"{results.mean(m, b, shape=shape)[1]:.2f}" for b in budgets)
                for m in (*BM25_METHODS, "Nexus")
            )
            print(f"{shape:<20}" + "".join(f" {figures:>16}" for figures in row))

    def best_bm25(budget: int) -> float:
        return max(results.mean(m, budget)[1] for m in BM25_METHODS)

    beats = all(results.mean("Nexus", b)[1] > best_bm25(b) for b in budgets)
    middle, last = budgets[1], budgets[-1]
    ratio = results.mean("Nexus", last)[1] / full if full else 0.0
    print(f"\nNexus beats BM25 (whole exchanges and passages) at every budget: {'yes' if beats else 'no'}")
    nexus = results.mean("Nexus", middle)[1]
    print(f"Nexus at {middle:,}: {nexus:.2f}; the better BM25 at {last:,}: {best_bm25(last):.2f}")
    print(f"Nexus at {last} / full history: {ratio:.2f} (goal >= {GOAL})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=sorted(SETS), default="synthetic", help="conversations to replay")
    parser.add_argument("--database", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--sqlite", default=SQLITE_PATH, help="the SQLite file, with --database sqlite")
    parser.add_argument("--conversations", type=int, default=4)
    parser.add_argument("--exchanges", type=int, help="per conversation (default: the set's)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--fresh", action="store_true", help="replay even when the sessions exist")
    parser.add_argument(
        "--literal", action="store_true", help="questions that also name a word of the answer"
    )
    parser.add_argument(
        "--dated", action="store_true", help="questions that also say when the fact was told"
    )
    parser.add_argument(
        "--tune", action="append", default=[], metavar="MODULE.NAME=VALUE",
        help="a ranking constant to measure instead of the kept one (a Python literal)",
    )  # fmt: skip
    parser.add_argument("--hash", action="store_true", help="print the conversations' hash and stop")
    args = parser.parse_args()

    probe = SETS[args.set]
    exchanges = args.exchanges or probe.exchanges
    conversations = probe.make(args.seed, args.conversations, exchanges)
    if args.hash:
        shape = f"{args.set}, seed {args.seed}, {len(conversations)} x {exchanges}"
        print(f"{shape}: {fingerprint(conversations)}")
        return
    url = setup(args.database, args.sqlite)
    for tuned in args.tune:
        target, value = tuned.split("=", 1)
        module, name = target.rsplit(".", 1)
        setattr(importlib.import_module(module), name, ast.literal_eval(value))
        print(f"tuned {target} = {value}")
    api = Api()
    questions = sum(len(c.questions) for c in conversations)
    print(
        f"Memory recall on {database_label(url)}: {len(conversations)} {args.set} conversations of "
        f"{exchanges} exchanges, {questions} questions, seed {args.seed}"
    )

    replay = Replay()
    uuids = [session_for(api, c, args.fresh, replay) for c in conversations]
    if replay.episodes:
        print(f"replayed {replay.episodes:,} episodes in {replay.requests} requests, {replay.seconds:.1f} s")
    else:
        print("reused the sessions of an earlier replay (--fresh replays them)")
    if not replay.dated:
        print("created_at not supported: dates are the replay time")
    print("summary rows per session: " + ", ".join(str(summary_rows(u)) for u in uuids))
    from summaries.summary_index import refresh_stale

    print(f"summary rows indexed now (words and vectors): {refresh_stale()}")

    if args.literal:
        conversations = [replace(c, questions=literal(c)) for c in conversations]
        asked = sum(len(c.questions) for c in conversations)
        print(f"literal questions: {asked}, each naming a word of its answer")
    if args.dated:
        conversations = [replace(c, questions=recall_dated.dated(c)) for c in conversations]
        asked = sum(len(c.questions) for c in conversations)
        print(f"dated questions: {asked}, each saying when its fact was told")
    results = Results()
    for uuid, conversation in zip(uuids, conversations, strict=True):
        evaluate(api, uuid, conversation, probe.budgets, results)
        small_talk(api, uuid, conversation, probe.budgets, results)
    print_report(results, conversations, probe.budgets)


if __name__ == "__main__":
    main()

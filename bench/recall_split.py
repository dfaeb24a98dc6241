"""Memory of a person across sessions: does a new chat still know what was
said in the person's earlier ones?

The conversations of bench/memory_recall.py (``--set synthetic`` or
``assistant``: facts, updated facts, dates and, in ``assistant``, standing
instructions, told early and asked about at the end in other words) are
replayed twice through the API: as one session holding everything (the
sessions bench/memory_recall.py replays, reused), and split, each day the
person chatted its own shared session of one end user. Every question is
then asked (``GET /api/sessions/{uuid}/context/``) at 1,000 / 2,000 /
4,000 tokens of:

- ``one session``: the session holding everything;
- ``split, new shared``: a new, empty shared session of the same end user
  (``memory_scope: "shared"``), which reads the split history;
- ``split, new session-scoped``: a new session-scoped session of the same
  end user, which reads nothing of it (the floor, near zero).

Printed: answer-word recall and mean tokens of each, the shared row over
the one-session row at 2,000 tokens (goal >= 0.9); for each standing
instruction, the share of the person's later questions about other things
(and of small talk) whose context carries all of its words (goal >= 0.95);
and the isolation check. For that, beside each person, three sessions hold
copies of the exchanges that answer the person's questions, every message
marked with a word of its own: a shared session of another end user of the
same owner, a session-scoped session of the same end user, and a shared
session of the same end user id under another owner. A context holding a
marker is a leak; the bench counts them and exits 1 when any is found.

    .venv/bin/python bench/recall_split.py [--set synthetic|assistant] [--conversations 4]
        [--exchanges N] [--seed 7] [--database sqlite|postgres] [--sqlite PATH] [--fresh]

Databases and reuse as bench/memory_recall.py (the split sessions are
titled by their conversation's key and hash). Figures: bench/README.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import warnings
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
warnings.filterwarnings("ignore", "No directory at", UserWarning)
sys.path.insert(0, str(ROOT))

from bench.memory_recall import SETS, SMALL_TALK, database_label  # noqa: E402
from bench.recall_data import INSTRUCTION, Conversation, holds  # noqa: E402
from bench.recall_replay import SQLITE_PATH, Api, Replay, expect, session_for, setup  # noqa: E402
from bench.recall_scoring import recall  # noqa: E402
from bench.recall_split_sessions import MARKERS, Split, split_sessions  # noqa: E402

BUDGETS = (1000, 2000, 4000)
ROWS = ("one session", "split, new shared", "split, new session-scoped")
GOAL_RATIO, GOAL_INSTRUCTION, RATIO_BUDGET = 0.9, 0.95, 2000


@dataclass
class Results:
    recall: dict[tuple[str, int], list[float]] = field(default_factory=lambda: defaultdict(list))
    tokens: dict[tuple[str, int], list[int]] = field(default_factory=lambda: defaultdict(list))
    # (row, budget) -> per instruction: 1 when a later context carries it, else 0
    carried: dict[tuple[str, int], list[int]] = field(default_factory=lambda: defaultdict(list))
    over_budget: dict[tuple[str, int], int] = field(default_factory=lambda: defaultdict(int))
    leaks: list[str] = field(default_factory=list)
    contexts: int = 0


def context(api: Api, uuid: str, question: str, budget: int) -> dict:
    status, body = api.get(f"/api/sessions/{uuid}/context/", {"question": question, "budget": budget})
    return expect(status, body, 200, "GET context")


def check_leaks(prompt: str, row: str, question: str, results: Results) -> None:
    results.contexts += 1
    lowered = prompt.lower()
    for where, marker in MARKERS.items():
        if marker in lowered:
            results.leaks.append(f"{row}: {where} in the context of {question!r}")


def evaluate(api: Api, row: str, uuid: str, conversation: Conversation, results: Results) -> None:
    instructions = [q for q in conversation.questions if q.kind == INSTRUCTION]
    for budget in BUDGETS:
        later: list[tuple[str, str]] = []  # (message, its context) of every question and small talk
        for question in conversation.questions:
            body = context(api, uuid, question.text, budget)
            check_leaks(body["prompt"], row, question.text, results)
            results.recall[(row, budget)].append(recall(question, body["prompt"]))
            results.tokens[(row, budget)].append(body["token_count"])
            results.over_budget[(row, budget)] += body["token_count"] > budget
            later.append((question.text, body["prompt"]))
        if instructions:
            for message in SMALL_TALK:
                body = context(api, uuid, message, budget)
                check_leaks(body["prompt"], row, message, results)
                later.append((message, body["prompt"]))
        for instruction in instructions:
            results.carried[(row, budget)] += [
                int(holds(instruction, prompt.lower()))
                for message, prompt in later
                if message != instruction.text
            ]


def ask_from(api: Api, split: Split, scope: str) -> str:
    """A new, empty session of the person, of this scope (reused across runs: it stays empty)."""
    title = f"{split.title}, asking ({scope})"
    from sessions_app.models import ChatSession

    found = ChatSession.objects.filter(
        owner__username=split.owner, title=title, cached_episode_count=0
    ).first()
    if found is not None:
        return str(found.uuid)
    body = {"title": title, "end_user": split.end_user, "memory_scope": scope}
    created = expect(*api.post("/api/sessions/", body), 201, "POST /api/sessions/")
    if created.get("memory_scope") != scope:
        raise SystemExit("the sessions API does not take end_user and memory_scope: nothing to measure")
    return created["id"]


def mean(values: list) -> float:
    return statistics.fmean(values) if values else 0.0


def print_report(results: Results, conversations: list[Conversation]) -> bool:
    print(f"\n{'budget':>7}  {'context read from':<27} {'mean tokens':>11} {'recall':>7}")
    for budget in BUDGETS:
        for row in ROWS:
            note = (
                f"  ({results.over_budget[(row, budget)]} over budget)"
                if results.over_budget[(row, budget)]
                else ""
            )
            print(
                f"{budget:>7,}  {row:<27} {mean(results.tokens[(row, budget)]):>11,.0f} "
                f"{mean(results.recall[(row, budget)]):>7.2f}{note}"
            )
    whole = mean(results.recall[(ROWS[0], RATIO_BUDGET)])
    shared = mean(results.recall[(ROWS[1], RATIO_BUDGET)])
    ratio = shared / whole if whole else 0.0
    print(f"\nsplit (new shared) / one session at {RATIO_BUDGET:,}: {ratio:.2f} (goal >= {GOAL_RATIO})")
    told = sum(1 for c in conversations for q in c.questions if q.kind == INSTRUCTION)
    if told:
        print(f"\nstanding instructions ({told}): share of later unrelated contexts carrying each")
        for row in ROWS:
            shares = " / ".join(f"{mean(results.carried[(row, b)]):.2f}" for b in BUDGETS)
            print(f"  {row:<27} {shares}  (at {' / '.join(f'{b:,}' for b in BUDGETS)})")
    else:
        print("\nstanding instructions: this set states none (--set assistant does)")
    print(f"\nisolation: {results.contexts:,} contexts, {len(results.leaks)} holding another's text")
    for leak in results.leaks[:10]:
        print(f"  LEAK {leak}")
    return not results.leaks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=("synthetic", "assistant"), default="synthetic")
    parser.add_argument("--database", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--sqlite", default=SQLITE_PATH, help="the SQLite file, with --database sqlite")
    parser.add_argument("--conversations", type=int, default=4)
    parser.add_argument("--exchanges", type=int, help="per conversation (default: the set's)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--fresh", action="store_true", help="replay even when the sessions exist")
    args = parser.parse_args()

    probe = SETS[args.set]
    exchanges = args.exchanges or probe.exchanges
    conversations = probe.make(args.seed, args.conversations, exchanges)
    url = setup(args.database, args.sqlite)
    api = Api()
    questions = sum(len(c.questions) for c in conversations)
    print(
        f"Split-history recall on {database_label(url)}: {len(conversations)} {args.set} conversations "
        f"of {exchanges} exchanges, {questions} questions, seed {args.seed}"
    )
    replay = Replay()
    whole = [session_for(api, c, args.fresh, replay) for c in conversations]
    splits = [split_sessions(api, c, args.fresh, replay) for c in conversations]
    print(f"replayed {replay.episodes:,} episodes in {replay.requests} requests" if replay.episodes else
          "reused the sessions of an earlier replay (--fresh replays them)")  # fmt: skip
    days = sum(len(c.sessions) for c in conversations)
    print(f"split: {days} day sessions, and {len(MARKERS)} marked sessions beside each person")
    from summaries.summary_index import refresh_stale

    refresh_stale()
    results = Results()
    for uuid, split, conversation in zip(whole, splits, conversations, strict=True):
        evaluate(api, ROWS[0], uuid, conversation, results)
        evaluate(api, ROWS[1], ask_from(api, split, "shared"), conversation, results)
        evaluate(api, ROWS[2], ask_from(api, split, "session"), conversation, results)
    if not print_report(results, conversations):
        raise SystemExit(1)


if __name__ == "__main__":
    main()

"""Notes about the person, measured on the assistant-shaped conversations of
bench/memory_recall.py (``--set assistant``).

1. The offline rules (notes.rules) on every user message: how many of the
   standing instructions and preferences said once are found, and how many
   other notes the rules make (messages full of pasted logs, code and
   questions: what a note must not come from).
2. Each conversation's days replayed as shared sessions of one end user
   (the API, as a client writes them; notes are found after each write).
   Then every question that is not about an instruction ("unrelated") is
   asked from a new shared session of the same person and from the newest
   one, at 1,000 / 2,000 / 4,000 tokens, with notes (``CONTEXT_NOTES_SHARE``
   as set) and without (0): the share of those contexts that carry each
   standing instruction (all its answer words in the prompt), the answer-word
   recall of the unrelated questions (the notes must not push answers out),
   and the notes' mean tokens.

    .venv/bin/python bench/notes_recall.py [--database sqlite|postgres] [--conversations 2]
        [--exchanges 160] [--seed 7] [--semantic]

Retrieval by meaning is off unless ``--semantic`` (encoding on two slow cores
takes long, and the notes do not depend on it). Figures: bench/README.md.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

BUDGETS = (1000, 2000, 4000)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--conversations", type=int, default=2)
    parser.add_argument("--exchanges", type=int, default=160)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--semantic", action="store_true")
    args = parser.parse_args()
    if not args.semantic:
        os.environ["CONTEXT_SEMANTIC_CANDIDATES"] = "0"
    os.environ.setdefault("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/nexus_notes_bench")
    from bench.recall_assistant import make_conversations
    from bench.recall_replay import setup

    url = setup(args.database, sqlite_path="/tmp/nexus_notes_bench.sqlite3")
    conversations = make_conversations(args.seed, args.conversations, args.exchanges)
    print(f"database {url.split('@')[-1]}; {len(conversations)} conversations of {args.exchanges} exchanges")
    rules_figures(conversations)
    context_figures(conversations)


def instruction_questions(conversation):
    return [q for q in conversation.questions if q.kind == "instruction"]


def rules_figures(conversations) -> None:
    from bench.recall_data import words
    from notes.rules import statements

    stated = found = other = messages = 0
    examples: list[str] = []
    for conversation in conversations:
        notes = [s for ex in conversation.exchanges for s in statements(ex.user_input)]
        messages += len(conversation.exchanges)
        wanted = instruction_questions(conversation)
        stated += len(wanted)
        hit = [q for q in wanted if any(set(q.answers) <= words(n.text) for n in notes)]
        found += len(hit)
        for note in notes:
            if not any(set(q.answers) <= words(note.text) for q in wanted):
                other += 1
                examples.append(f"{note.kind}: {note.text[:100]}")
    print("\n| offline rules | figure |\n|---|---|")
    print(f"| user messages read | {messages} |")
    print(f"| standing instructions and preferences said once, found | {found} / {stated} |")
    print(f"| other notes made | {other} |")
    for example in examples[:8]:
        print(f"  other: {example}")


def replay(conversation):
    from django.contrib.auth import get_user_model

    from notes.models import Note
    from sessions_app.models import ChatSession
    from sessions_app.services import EpisodeInput, episodes_bulk_create
    from sessions_app.session_writes import session_create

    owner, _ = get_user_model().objects.get_or_create(username="bench-notes")
    end_user = conversation.key[:200]
    ChatSession.objects.filter(owner=owner, end_user=end_user).delete()
    Note.objects.filter(owner=owner, end_user=end_user).delete()
    newest = None
    for day in conversation.sessions:
        newest = session_create(owner=owner, end_user=end_user, memory_scope="shared", title=conversation.key)
        items = [
            EpisodeInput(user_input=ex.user_input, response=ex.response, created_at=ex.created_at)
            for ex in day
        ]
        episodes_bulk_create(session=newest, items=items)
    fresh = session_create(owner=owner, end_user=end_user, memory_scope="shared", title="new chat")
    return newest, fresh


def context_figures(conversations) -> None:
    from django.conf import settings

    from bench.recall_data import words
    from notes.context import NOTES_HEADER
    from sessions_app.tokens import count_tokens
    from summaries.context import build_context

    share = settings.CONTEXT_NOTES_SHARE
    rows: dict[tuple[str, str, int], list[float]] = {}
    for conversation in conversations:
        newest, fresh = replay(conversation)
        wanted = instruction_questions(conversation)
        unrelated = [q for q in conversation.questions if q.kind != "instruction"]
        for label, notes_share in (("with notes", share), ("without", 0.0)):
            settings.CONTEXT_NOTES_SHARE = notes_share
            for where, session in (("new session", fresh), ("newest session", newest)):
                session.refresh_from_db()
                for budget in BUDGETS:
                    carried: list[bool] = []
                    recall: list[float] = []
                    tokens: list[int] = []
                    for question in unrelated:
                        prompt = build_context(session=session, question=question.text, budget=budget).prompt
                        seen = words(prompt)
                        carried += [set(q.answers) <= seen for q in wanted]
                        recall.append(len(set(question.answers) & seen) / len(set(question.answers)))
                        section = prompt.split("\n\n")[1] if NOTES_HEADER in prompt else ""
                        tokens.append(count_tokens(section))
                    totals = rows.setdefault((label, where, budget), [0, 0, 0, 0, 0])
                    totals[0] += sum(carried)
                    totals[1] += len(carried)
                    totals[2] += sum(recall)
                    totals[3] += len(recall)
                    totals[4] += sum(tokens)
        settings.CONTEXT_NOTES_SHARE = share
    print(f"\n| context (CONTEXT_NOTES_SHARE {share}) | where asked | budget | instruction carried | "
          "answer recall of unrelated questions | notes tokens (mean) |")
    print("|---|---|---|---|---|---|")
    for (label, where, budget), (hit, pairs, recall, asked, tokens) in rows.items():
        print(
            f"| {label} | {where} | {budget} | {hit / max(pairs, 1):.2f} ({hit}/{pairs}) | "
            f"{recall / max(asked, 1):.2f} | {tokens / max(asked, 1):.0f} |"
        )


if __name__ == "__main__":
    main()

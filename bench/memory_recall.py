"""How much of what the user told Nexus does the context still hold?

Long synthetic conversations (four of 320 exchanges by default, in sessions
days or weeks apart through 2023, with facts planted early, some of them
changed later, distractors and chit-chat), from one of two sets:
``--set synthetic`` (bench/recall_synthetic.py: a user tells an assistant short
facts, one to a turn, and the replies are short) or ``--set dialogue``
(bench/recall_dialogue.py: two friends chatting, and a user with an
assistant that writes long answers; facts told in passing, by either side,
in relative time, a few needing two exchanges), are replayed as live
traffic: one ``POST /api/sessions/{uuid}/episodes/`` per day the user
chatted, through the test client with token authentication, on the embedded
default (``offline`` backend, no broker: summarization runs in-process after
each commit, between the posts). Each episode is sent with its
``created_at``; when the API does not take it, the episodes carry the replay
time instead and a note says so.

Then every question (asked in other words than the fact was told) is put to
four contexts, at budgets of 1,000, 2,000 and 4,000 tokens (cl100k_base):

- full history: every episode in full with its date, no budget;
- buffer: the newest episodes that fit;
- BM25 top-k: the episodes ranking highest for the question (k1 1.2, b 0.75),
  oldest first with their dates, as many as fit;
- Nexus: the ``prompt`` of ``GET /api/sessions/{uuid}/context/?question=&budget=``.

A context's recall is the fraction of the question's answer words (lower-case
content words; for a date its day, month name and year) found in it as whole
words. Prints mean tokens and recall per budget and method, a breakdown by
question type at 2,000, and whether Nexus beats BM25 and reaches 90 % of the
full history's recall at 4,000.

``--literal`` asks the non-date questions again, each also naming the rarest
word of the first exchange that answers it ("... the Kestrel support group?"):
the sets ask in other words on purpose, and this is the other kind of
question, which reuses the conversation's words and favours BM25.

    .venv/bin/python bench/memory_recall.py [--set synthetic|dialogue] [--database sqlite|postgres] [--sqlite PATH]
        [--conversations 4] [--exchanges 320] [--seed 7] [--fresh] [--literal]

SQLite uses ``--sqlite`` (default /tmp/nexus_recall.sqlite3); PostgreSQL uses ``BENCH_DATABASE_URL``
(default ``nexus_recall_bench``, created if missing). Sessions already replayed
with the same set, seed and sizes are reused (a session's title is its
conversation's key, which names the dialogue set); ``--fresh`` replays them
again.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import statistics
import sys
import time
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# WhiteNoise looks for collected static files, which a benchmark does not build.
warnings.filterwarnings("ignore", "No directory at", UserWarning)
sys.path.insert(0, str(ROOT))

from bench import recall_dialogue, recall_synthetic  # noqa: E402
from bench.recall_data import (  # noqa: E402
    DATE,
    KINDS,
    WORD,
    Conversation,
    Exchange,
    Question,
    long_date,
    words,
)
from sessions_app.tokens import count_tokens  # noqa: E402  (tiktoken only: no Django needed)

SQLITE_PATH = "/tmp/nexus_recall.sqlite3"
POSTGRES_URL = "postgres://postgres@127.0.0.1:5432/nexus_recall_bench"
BUDGETS = (1000, 2000, 4000)
BREAKDOWN_BUDGET = 2000
GOAL = 0.9
METHODS = ("buffer", "BM25 top-k", "Nexus")
QUESTION_LABEL = "User Question: "
USERNAME = "bench-recall"
# The probe sets, by name: each a make_conversations(seed, count, exchanges).
SETS = {"synthetic": recall_synthetic.make_conversations, "dialogue": recall_dialogue.make_conversations}


# --- set-up ----------------------------------------------------------------------


def setup(database: str, sqlite_path: str = SQLITE_PATH) -> str:
    """Point Django at the benchmark database, migrate it; returns its URL.

    The embedded default as a user runs it: the offline backend and no broker,
    so summarization runs in-process after each commit.
    """
    os.environ.pop("CELERY_BROKER_URL", None)
    env = {
        "INFERENCE_BACKEND": "offline",
        "DJANGO_ALLOWED_HOSTS": "testserver",  # the test client's host
        "API_THROTTLE_USER": "100000000/minute",  # replay and questions far above the default rate
        "LOG_LEVEL": "WARNING",
    }
    if database == "postgres":
        os.environ.setdefault("BENCH_DATABASE_URL", POSTGRES_URL)
        from bench.support import setup_django

        return setup_django(**env)

    url = f"sqlite:///{sqlite_path}"
    os.environ.update(env, DATABASE_URL=url, DJANGO_SETTINGS_MODULE="nexus.settings")
    os.environ.setdefault("DJANGO_SECRET_KEY", "bench-only-secret-key")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    return url


class Api:
    """The REST API through the test client, authenticated as the benchmark's user."""

    def __init__(self) -> None:
        from django.contrib.auth import get_user_model
        from rest_framework.authtoken.models import Token
        from rest_framework.test import APIClient

        user, _ = get_user_model().objects.get_or_create(username=USERNAME)
        token, _ = Token.objects.get_or_create(user=user)
        self.client = APIClient()
        self.client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")

    # secure=True throughout: production settings redirect plain HTTP to HTTPS.
    def get(self, path: str, params: dict[str, Any] | None = None) -> tuple[int, Any]:
        response = self.client.get(path, params or {}, secure=True)
        return response.status_code, response.json()

    def post(self, path: str, body: Any) -> tuple[int, Any]:
        response = self.client.post(path, body, format="json", secure=True)
        return response.status_code, response.json()

    def delete(self, path: str) -> None:
        self.client.delete(path, secure=True)


def expect(status: int, body: Any, wanted: int, what: str) -> Any:
    if status != wanted:
        raise SystemExit(f"{what} answered {status}: {str(body)[:300]}")
    return body


# --- replay ------------------------------------------------------------------------


@dataclass
class Replay:
    dated: bool | None = None  # does the API keep created_at? None until the first post says
    requests: int = 0
    episodes: int = 0
    seconds: float = 0.0


def title_of(conversation: Conversation) -> str:
    """The key names the set for dialogue conversations ("dialogue (friends),
    seed 7 #1 n=320"); synthetic keys are as before, so their earlier
    replays are still found."""
    return f"memory recall bench, {conversation.key}"


def episode_payload(exchange: Exchange, dated: bool) -> dict[str, str]:
    payload = {"user_input": exchange.user_input, "response": exchange.response}
    if dated:
        payload["created_at"] = exchange.created_at.isoformat()
    return payload


def kept_date(sent: Exchange, stored: dict[str, Any]) -> bool:
    """Whether the stored episode carries the exchange's own time, not the replay's."""
    return datetime.fromisoformat(stored["created_at"]) == sent.created_at


def post_session(api: Api, uuid: str, day: list[Exchange], replay: Replay) -> None:
    """One day's exchanges in one request, as a client syncing after a chat would."""
    path = f"/api/sessions/{uuid}/episodes/"
    dated = replay.dated is not False
    status, body = api.post(path, [episode_payload(e, dated) for e in day])
    replay.requests += 1
    if status == 400 and dated and "created_at" in str(body):
        replay.dated = False
        status, body = api.post(path, [episode_payload(e, False) for e in day])
        replay.requests += 1
    expect(status, body, 201, f"POST {path}")
    if replay.dated is None:
        # An API that does not know the field may ignore it and answer 201.
        replay.dated = kept_date(day[0], body[0])
    replay.episodes += len(day)


def find_session(api: Api, title: str, size: int) -> str | None:
    """The uuid of a complete earlier replay with this title; incomplete ones are deleted."""
    from django.db.models import Count

    from sessions_app.models import ChatSession

    found = None
    sessions = ChatSession.objects.filter(owner__username=USERNAME, title=title)
    for session in sessions.annotate(size=Count("episodes")):
        if session.size == size and found is None:
            found = str(session.uuid)
        else:
            api.delete(f"/api/sessions/{session.uuid}/")
    return found


def replayed_dated(api: Api, uuid: str, first: Exchange) -> bool:
    status, body = api.get(f"/api/sessions/{uuid}/episodes/")
    expect(status, body, 200, "GET episodes")
    return kept_date(first, body["results"][0])


def session_for(api: Api, conversation: Conversation, fresh: bool, replay: Replay) -> str:
    """The session holding ``conversation``: reused when complete, else replayed."""
    title = title_of(conversation)
    size = len(conversation.exchanges)
    uuid = find_session(api, title, size)
    if uuid is not None and fresh:
        api.delete(f"/api/sessions/{uuid}/")
        uuid = None
    if uuid is not None:
        if replay.dated is None:
            replay.dated = replayed_dated(api, uuid, conversation.sessions[0][0])
        return uuid
    uuid = expect(*api.post("/api/sessions/", {"title": title}), 201, "POST /api/sessions/")["id"]
    start = time.perf_counter()
    for day in conversation.sessions:
        post_session(api, uuid, day, replay)
    replay.seconds += time.perf_counter() - start
    return uuid


# --- contexts ------------------------------------------------------------------------


def dated_pair(exchange: Exchange) -> str:
    return f"[{long_date(exchange.created_at.date())}] Q: {exchange.user_input}\nA: {exchange.response}"


def render(question: str, exchanges: Sequence[Exchange]) -> str:
    """A baseline context: the question, then the chosen exchanges oldest first."""
    return "\n\n".join([QUESTION_LABEL + question] + [dated_pair(e) for e in exchanges])


def fit(question: str, candidates: Sequence[int], pair_tokens: Sequence[int], budget: int) -> list[int]:
    """Indexes from ``candidates``, in their order, while the context stays within ``budget``.

    A pair too large for what is left is skipped, not the end: a smaller one
    further down may still fit. The separators are counted as two tokens each,
    a slight overestimate, so the rendered text never exceeds the budget."""
    used = count_tokens(QUESTION_LABEL + question)
    chosen = []
    for index in candidates:
        if used + pair_tokens[index] + 2 <= budget:
            chosen.append(index)
            used += pair_tokens[index] + 2
    return chosen


STOPWORDS = words(
    "a an and are as at be by did do does for from has have he her his how i I'd in is it its me my "
    "now of on or our say said she so that the their them then there these they this to was we what "
    "when where which who why will with you your am can"
)


def terms(text: str) -> list[str]:
    return [w for w in words_in_order(text) if w not in STOPWORDS]


def words_in_order(text: str) -> list[str]:
    return WORD.findall(text.lower())


@dataclass
class Bm25:
    """Okapi BM25 over one conversation's episodes (user input and reply together)."""

    documents: list[Counter[str]]
    k1: float = 1.2
    b: float = 0.75
    document_frequency: Counter[str] = field(default_factory=Counter)

    @classmethod
    def over(cls, exchanges: Sequence[Exchange]) -> Bm25:
        index = cls([Counter(terms(e.user_input + " " + e.response)) for e in exchanges])
        for document in index.documents:
            index.document_frequency.update(document.keys())
        return index

    def ranking(self, query: str) -> list[int]:
        """Episode indexes, best first; ties keep the newer episode first."""
        scores = self.scores(query)
        return sorted(range(len(scores)), key=lambda index: (-scores[index], -index))

    def scores(self, query: str) -> list[float]:
        """Each episode's BM25 score for ``query`` (0 for one holding none of its terms)."""
        count = len(self.documents)
        average = sum(sum(d.values()) for d in self.documents) / count
        query_terms = set(terms(query))
        scores = []
        for document in self.documents:
            length = sum(document.values())
            score = 0.0
            for term in query_terms:
                tf = document[term]
                if tf:
                    df = self.document_frequency[term]
                    idf = math.log(1 + (count - df + 0.5) / (df + 0.5))
                    norm = self.k1 * (1 - self.b + self.b * length / average)
                    score += idf * tf * (self.k1 + 1) / (tf + norm)
            scores.append(score)
        return scores


def literal(conversation: Conversation) -> list[Question]:
    """``--literal``: the non-date questions, each also naming the rarest other
    word of the first exchange that answers it, as questions that reuse the
    conversation's words do. A date's answer is an exchange's date, not a word."""
    bm25 = Bm25.over(conversation.exchanges)
    asked = []
    for question in conversation.questions:
        if question.kind == DATE:
            continue
        holder = next(
            e
            for e in conversation.exchanges
            if all(answer in words(e.user_input + " " + e.response) for answer in question.answers)
        )
        known = set(terms(question.text)) | set(question.answers)
        others = [
            t for t in dict.fromkeys(terms(holder.user_input + " " + holder.response)) if t not in known
        ]
        rarest = min(others, key=lambda t: bm25.document_frequency[t])
        asked.append(replace(question, text=f"{question.text} {rarest}"))
    return asked


MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
# A date as people and the dated contexts write it: "8 May 2023", "8 May", "May 8, 2023".
DATE_MENTION = re.compile(
    rf"\b(?:(\d{{1,2}}) ({MONTHS})|({MONTHS}) (\d{{1,2}}))\b(?:,? (\d{{4}})\b)?", re.IGNORECASE
)


def date_mentions(context: str) -> set[tuple[str, ...]]:
    """(day, month, year) and (day, month) of every date written in ``context``."""
    mentions: set[tuple[str, ...]] = set()
    for match in DATE_MENTION.finditer(context):
        day = match.group(1) or match.group(4)
        month = (match.group(2) or match.group(3)).lower()
        mentions.add((day, month))
        if match.group(5):
            mentions.add((day, month, match.group(5)))
    return mentions


def recall(question: Question, context: str) -> float:
    """Fraction of the answer words in ``context``.

    A date's words count only where the date is written together: every
    dated context holds "2023" and most months somewhere, which says nothing
    about whether it knows the day asked about."""
    if question.kind == DATE:
        mentions = date_mentions(context)
        # (day, month, year) written together scores all three; (day, month) two.
        lengths = range(len(question.answers), 1, -1)
        best = max((n for n in lengths if question.answers[:n] in mentions), default=0)
        return best / len(question.answers)
    found = words(context)
    return sum(answer in found for answer in question.answers) / len(question.answers)


@dataclass
class Score:
    tokens: int
    recall: float


@dataclass
class Results:
    """Scores by (method, budget), each with its question's kind and its
    conversation's shape; budget None for full history."""

    scores: dict[tuple[str, int | None], list[tuple[str, str, Score]]] = field(default_factory=dict)
    rejected: Counter[int] = field(default_factory=Counter)  # budget -> 400 answers
    over_budget: Counter[int] = field(default_factory=Counter)

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


def nexus_score(api: Api, uuid: str, question: Question, budget: int, results: Results) -> Score:
    status, body = api.get(f"/api/sessions/{uuid}/context/", {"question": question.text, "budget": budget})
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


def evaluate(api: Api, uuid: str, conversation: Conversation, results: Results) -> None:
    exchanges = conversation.exchanges
    shape = shape_of(conversation)
    pair_tokens = [count_tokens(dated_pair(e)) for e in exchanges]
    newest_first = list(range(len(exchanges) - 1, -1, -1))
    index = Bm25.over(exchanges)
    for question in conversation.questions:
        full = render(question.text, exchanges)
        results.add(
            "full history", None, question.kind, shape, Score(count_tokens(full), recall(question, full))
        )
        ranking = index.ranking(question.text)
        for budget in BUDGETS:
            for method, order in (("buffer", newest_first), ("BM25 top-k", ranking)):
                chosen = sorted(fit(question.text, order, pair_tokens, budget))
                text = render(question.text, [exchanges[i] for i in chosen])
                results.add(
                    method, budget, question.kind, shape, Score(count_tokens(text), recall(question, text))
                )
            results.add(
                "Nexus", budget, question.kind, shape, nexus_score(api, uuid, question, budget, results)
            )


# --- report ----------------------------------------------------------------------------


def database_label(url: str) -> str:
    return ("PostgreSQL" if url.startswith("postgres") else "SQLite") + f" ({url})"


def summary_rows(uuid: str) -> int:
    from summaries.models import Summary

    return Summary.objects.filter(session__uuid=uuid).count()


def print_report(results: Results, conversations: list[Conversation]) -> None:
    print(f"\n{'budget':>7}  {'method':<13} {'mean tokens':>11} {'recall':>7}")
    tokens, full = results.mean("full history", None)
    print(f"{'-':>7}  {'full history':<13} {tokens:>11,.0f} {full:>7.2f}")
    for budget in BUDGETS:
        for method in METHODS:
            tokens, value = results.mean(method, budget)
            note = ""
            if method == "Nexus" and results.over_budget[budget]:
                note += f"  ({results.over_budget[budget]} over budget)"
            if method == "Nexus" and results.rejected[budget]:
                note += f"  ({results.rejected[budget]} answered 400, counted 0)"
            print(f"{budget:>7,}  {method:<13} {tokens:>11,.0f} {value:>7.2f}{note}")

    kinds = Counter(q.kind for c in conversations for q in c.questions)
    print(f"\nat {BREAKDOWN_BUDGET:,} tokens, by question type:")
    print(f"{'type':<13} {'questions':>9} {'BM25':>6} {'Nexus':>6}")
    for kind in (k for k in KINDS if kinds[k]):
        bm25 = results.mean("BM25 top-k", BREAKDOWN_BUDGET, kind)[1]
        nexus = results.mean("Nexus", BREAKDOWN_BUDGET, kind)[1]
        print(f"{kind:<13} {kinds[kind]:>9} {bm25:>6.2f} {nexus:>6.2f}")

    shapes = sorted({shape_of(c) for c in conversations})
    if len(shapes) > 1:
        print("\nby conversation shape, recall at " + " / ".join(f"{b:,}" for b in BUDGETS) + " tokens:")
        print(f"{'shape':<20} {'BM25':>16} {'Nexus':>16}")
        for shape in shapes:
            bm25, nexus = (
                " / ".join(f"{results.mean(m, b, shape=shape)[1]:.2f}" for b in BUDGETS)
                for m in ("BM25 top-k", "Nexus")
            )
            print(f"{shape:<20} {bm25:>16} {nexus:>16}")

    beats = all(results.mean("Nexus", b)[1] > results.mean("BM25 top-k", b)[1] for b in BUDGETS)
    ratio = results.mean("Nexus", BUDGETS[-1])[1] / full if full else 0.0
    print(f"\nNexus beats BM25 at every budget: {'yes' if beats else 'no'}")
    print(f"Nexus at {BUDGETS[-1]} / full history: {ratio:.2f} (goal >= {GOAL})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=sorted(SETS), default="synthetic", help="conversations to replay")
    parser.add_argument("--database", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--sqlite", default=SQLITE_PATH, help="the SQLite file, with --database sqlite")
    parser.add_argument("--conversations", type=int, default=4)
    parser.add_argument("--exchanges", type=int, default=320, help="per conversation")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--fresh", action="store_true", help="replay even when the sessions exist")
    parser.add_argument(
        "--literal", action="store_true", help="questions that also name a word of the answer"
    )
    args = parser.parse_args()

    url = setup(args.database, args.sqlite)
    api = Api()
    conversations = SETS[args.set](args.seed, args.conversations, args.exchanges)
    questions = sum(len(c.questions) for c in conversations)
    print(
        f"Memory recall on {database_label(url)}: {len(conversations)} {args.set} conversations of "
        f"{args.exchanges} exchanges, {questions} questions, seed {args.seed}"
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

    if args.literal:
        conversations = [replace(c, questions=literal(c)) for c in conversations]
        print(
            f"literal questions: {sum(len(c.questions) for c in conversations)}, each naming a word of its answer"
        )
    results = Results()
    for uuid, conversation in zip(uuids, conversations, strict=True):
        evaluate(api, uuid, conversation, results)
    print_report(results, conversations)


if __name__ == "__main__":
    main()

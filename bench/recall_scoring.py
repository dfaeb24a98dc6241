"""How bench/memory_recall.py scores a context, and the baselines it builds.

A context's recall is the fraction of the question's answer words
(lower-case content words; for a date its day, month name and year, written
together) found in it as whole words. The baselines quote the conversation
in the bench's own dated layout: whole exchanges (``render``), or passages
of them (``quote_passages``), chosen by BM25 (``Bm25``: k1 1.2, b 0.75) or
by age, as many as fit the budget (``fit``).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from bench.recall_data import DATE, WORD, Conversation, Exchange, Question, long_date, words
from sessions_app.tokens import count_tokens  # tiktoken only: no Django needed

QUESTION_LABEL = "User Question: "
#: A passage packs whole sentences (a code block's whole lines) up to about this many tokens.
PASSAGE_TOKENS = 120


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
    """Okapi BM25 over one conversation's episodes (user input and reply
    together), or over any texts (``of``: its passages)."""

    documents: list[Counter[str]]
    k1: float = 1.2
    b: float = 0.75
    document_frequency: Counter[str] = field(default_factory=Counter)

    @classmethod
    def over(cls, exchanges: Sequence[Exchange]) -> Bm25:
        return cls.of([e.user_input + " " + e.response for e in exchanges])

    @classmethod
    def of(cls, texts: Sequence[str]) -> Bm25:
        index = cls([Counter(terms(text)) for text in texts])
        for document in index.documents:
            index.document_frequency.update(document.keys())
        return index

    def ranking(self, query: str) -> list[int]:
        """Document indexes, best first; ties keep the newer one first."""
        scores = self.scores(query)
        return sorted(range(len(scores)), key=lambda index: (-scores[index], -index))

    def scores(self, query: str) -> list[float]:
        """Each document's BM25 score for ``query`` (0 for one holding none of its terms)."""
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


# --- passages --------------------------------------------------------------------------
# A unit ends at a sentence's end or a line's: code and lists are cut between lines.
UNIT_END = re.compile(r"(?<=[.!?])[ \t]+|\s*\n\s*")


@dataclass(frozen=True, slots=True)
class Passage:
    """Consecutive sentences of one side of an exchange."""

    exchange: int  # the exchange's index in the conversation
    by_user: bool
    text: str
    day: str  # the exchange's date, as dated contexts write it

    @property
    def quoted(self) -> str:
        return f"[{self.day}] {'Q' if self.by_user else 'A'}: {self.text}"


def units(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence or line of ``text``."""
    spans, start = [], 0
    for match in UNIT_END.finditer(text):
        if match.start() > start:
            spans.append((start, match.start()))
        start = match.end()
    if start < len(text):
        spans.append((start, len(text)))
    return spans


def cut(text: str, limit: int = PASSAGE_TOKENS) -> list[str]:
    """``text`` in passages: whole units packed while they stay within
    ``limit`` tokens (a longer unit is a passage alone), as written between them."""
    found: list[str] = []
    first = last = None
    size = 0
    for start, end in units(text):
        tokens = count_tokens(text[start:end])
        if first is not None and size + tokens > limit:
            found.append(text[first:last])
            first = None
        if first is None:
            first, size = start, 0
        last, size = end, size + tokens + 1
    if first is not None:
        found.append(text[first:last])
    return found


def passages(exchanges: Sequence[Exchange]) -> list[Passage]:
    """Every exchange's passages, in conversation order: the user's side, then the reply's."""
    found = []
    for index, exchange in enumerate(exchanges):
        day = long_date(exchange.created_at.date())
        for by_user, side in ((True, exchange.user_input), (False, exchange.response)):
            found += [Passage(index, by_user, text, day) for text in cut(side)]
    return found


def quote_passages(question: str, chosen: Sequence[Passage]) -> str:
    """A passage baseline's context: the question, then the chosen passages in conversation order."""
    return "\n\n".join([QUESTION_LABEL + question] + [p.quoted for p in chosen])

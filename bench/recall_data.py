"""What the probe sets of bench/memory_recall.py share: conversations,
exchanges, questions, planted facts, and the calendar they are told on.

A conversation is one user chatting over months, in sessions days or weeks
apart; facts are planted in it, some changed later, with distractors, and
at the end each is asked about in other words. A question's answer words
are the lower-case content words a context must contain to answer it (for
dates: the day, the month's name and the year, as they are written or as
the exchange's date gives them). Everything comes from a seeded
``random.Random``: the same seed and sizes give the same text, dates and
questions.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone

# Kinds of question, as the benchmark breaks its figures down.
FACT, UPDATED, DATE, ORDER, INSTRUCTION = "fact", "updated fact", "date", "ordering", "instruction"
KINDS = (FACT, UPDATED, DATE, ORDER, INSTRUCTION)

# Sessions happen in the afternoon of a fixed offset, so an exchange's date is
# the same in UTC and in the user's time zone.
USER_TZ = timezone(timedelta(hours=1))
FIRST_DAY = date(2023, 1, 9)

WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> set[str]:
    """The lower-case words of ``text``, as answer words are matched."""
    return set(WORD.findall(text.lower()))


def long_date(day: date) -> str:
    """``8 May 2023``: how dated exchanges are written in every context."""
    return f"{day.day} {day:%B} {day.year}"


def date_words(day: date, *, year: bool = True) -> tuple[str, ...]:
    parts = (str(day.day), f"{day:%B}".lower())
    return parts + (str(day.year),) if year else parts


@dataclass(frozen=True, slots=True)
class Exchange:
    user_input: str
    response: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Question:
    text: str
    answers: tuple[str, ...]
    kind: str


@dataclass(frozen=True, slots=True)
class Conversation:
    key: str  # seed, number and size: the same key means the same text
    user_name: str
    sessions: list[list[Exchange]]  # one list per day the user chatted, oldest first
    questions: list[Question]

    @property
    def exchanges(self) -> list[Exchange]:
        return [exchange for session in self.sessions for exchange in session]


class Draw:
    """Values without repeats within one conversation: a distractor never
    shares the value of the fact it imitates."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def __call__(self, pool: list[str]) -> str:
        value = self.rng.choice([v for v in pool if v not in self.used])
        self.used.add(value)
        return value


# --- facts, as the sets build them (bench/recall_facts.py) ---------------------


@dataclass(frozen=True, slots=True)
class Line:
    """What a planted exchange says besides its filler."""

    text: str  # the teller's: a sentence, or a clause told in passing
    by_user: bool = True  # told in user_input, else in the response
    echo: str = ""  # the other side's sentence about it, in the same exchange
    topic: str = ""  # the assistant's topic, when the fact needs one
    request: str = ""  # the user's whole request, when the fact needs one


@dataclass(frozen=True, slots=True)
class Plant:
    window: tuple[float, float]
    write: Callable[[date], Line]  # the exchange's date -> what it says


@dataclass(frozen=True, slots=True)
class Fact:
    kind: str
    plants: list[Plant]  # in conversation order; an update (or a second hop) after what it builds on
    question: str
    answers: Callable[[list[date]], tuple[str, ...]]  # from the plants' dates
    distractors: list[Plant]
    # Further questions on the same plants: (kind, question, answers).
    more: list[tuple[str, str, Callable[[list[date]], tuple[str, ...]]]] = field(default_factory=list)


def fixed(*answers: str) -> Callable[[list[date]], tuple[str, ...]]:
    return lambda _dates: tuple(a.lower() for a in answers)


# --- the calendar ----------------------------------------------------------------


def session_calendar(
    rng: random.Random,
    total: int,
    *,
    first: date = FIRST_DAY,
    start_within: int = 20,
    sizes: tuple[int, int] = (5, 30),
    gaps: tuple[int, int] = (2, 21),
) -> list[tuple[date, int]]:
    """(day, exchanges that day) for ``total`` exchanges: ``sizes`` exchanges a
    session (by default 5 to 30), sessions ``gaps`` days apart (2 to 21),
    starting within ``start_within`` days of ``first`` (early 2023)."""
    day = first + timedelta(days=rng.randint(0, start_within))
    calendar: list[tuple[date, int]] = []
    left = total
    while left > 0:
        size = min(left, rng.randint(*sizes))
        if 0 < left - size < sizes[0]:  # no session shorter than the least at the end
            size = left
        calendar.append((day, size))
        left -= size
        day += timedelta(days=rng.randint(*gaps))
    return calendar


def exchange_times(
    rng: random.Random,
    day: date,
    count: int,
    *,
    hours: tuple[int, int] = (12, 16),
    pause: tuple[int, int] = (40, 300),
) -> list[datetime]:
    """Times within ``hours`` (by default the afternoon), ``pause`` seconds
    apart (a minute or a few), in the user's time zone."""
    moment = datetime.combine(day, time(rng.randint(*hours), rng.randint(0, 59)), USER_TZ)
    times = []
    for _ in range(count):
        times.append(moment)
        moment += timedelta(seconds=rng.randint(*pause))
    return times


# --- putting it together -----------------------------------------------------------


def plant(rng: random.Random, facts: list[Fact], days: list[date]) -> tuple[dict[int, Line], list[Question]]:
    """Where each fact's lines are told (positions in ``days``, the day of
    each exchange), what they say there, and the questions, in fact order."""
    planted: dict[int, Line] = {}
    questions: list[Question] = []
    taken: set[int] = set()
    for fact in facts:
        positions: list[int] = []
        for told in fact.plants:
            after = positions[-1] if positions else -1
            positions.append(place(rng, told.window, len(days), taken, after=after))
            planted[positions[-1]] = told.write(days[positions[-1]])
        for distractor in fact.distractors:
            position = place(rng, distractor.window, len(days), taken, after=-1)
            planted[position] = distractor.write(days[position])
        dates = [days[p] for p in positions]
        questions.append(Question(fact.question, fact.answers(dates), fact.kind))
        questions += [Question(question, answers(dates), kind) for kind, question, answers in fact.more]
    return planted, questions


def place(rng: random.Random, window: tuple[float, float], total: int, taken: set[int], after: int) -> int:
    """A free exchange position inside ``window`` (fractions of ``total``), after ``after``."""
    low = max(int(window[0] * total), after + 1)
    high = max(int(window[1] * total), low + 1)
    free = [i for i in range(low, min(high, total)) if i not in taken]
    if not free:
        raise ValueError(f"no room for a planted fact in {total} exchanges; use more exchanges")
    position = rng.choice(free)
    taken.add(position)
    return position




def fingerprint(conversations: list[Conversation]) -> str:
    """A hash of everything the conversations say and ask: the same for the
    same seed and sizes, so a change to how they are made can prove it kept them."""
    digest = hashlib.sha256()
    for conversation in conversations:
        digest.update(repr((conversation.key, conversation.user_name)).encode())
        for e in conversation.exchanges:
            digest.update(repr((e.user_input, e.response, e.created_at.isoformat())).encode())
        for q in conversation.questions:
            digest.update(repr((q.text, q.answers, q.kind)).encode())
    return digest.hexdigest()[:16]


def dated_text(exchanges: list[Exchange]) -> str:
    """The exchanges as the dated contexts write them, lower case."""
    return "\n".join(
        f"[{long_date(e.created_at.date())}] {e.user_input}\n{e.response}" for e in exchanges
    ).lower()


def holds(question: Question, text: str) -> bool:
    """Whether ``text`` (lower case) holds the answer: every word, or the date written together."""
    if question.kind == DATE:
        return re.search(rf"\b{' '.join(question.answers)}\b", text) is not None
    return set(question.answers) <= words(text)


def check(conversation: Conversation, *, quiet_tail: float) -> None:
    """Every answer is in the conversation and none in its last ``quiet_tail``
    (a fifth: 0.2), nor in its question: full history can answer everything,
    a buffer of the newest exchanges nothing."""
    exchanges = conversation.exchanges
    everything = dated_text(exchanges)
    tail = dated_text(exchanges[int(len(exchanges) * (1 - quiet_tail) + 1e-9) :])
    problems = []
    for q in conversation.questions:
        if not holds(q, everything):
            problems.append(f"{q.text} {q.answers}: not in the conversation")
        if holds(q, tail):
            problems.append(f"{q.text} {q.answers}: in the last {quiet_tail:.0%}")
        if q.kind != DATE and set(q.answers) & words(q.text):
            problems.append(f"{q.text} {q.answers}: in the question")
        if q.kind not in KINDS:
            problems.append(f"{q.text}: unknown kind {q.kind}")
    if problems:
        raise AssertionError(f"{conversation.key}: " + "; ".join(problems))

"""When a question asks about: the dates it names ("in May", "last week",
"two years ago", "yesterday", "on 8 May 2023"), resolved against the
moment it is asked (``asked_at``, in its own UTC offset, so "yesterday"
is the asker's yesterday).

Each date becomes a span of time, ``[start, end)``: a day for a day, the
calendar week, month or year for those, and for "N weeks/months/years
ago" the span around that moment (people round: "two years ago" is any
time that year). A month named without a year is the last such month
that has begun; a day without a year, the last such day. What is not a
date reference stays out: "every week", "these days", "a month" as an
amount ("for a month").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from django.conf import settings
from django.utils import timezone

from sessions_app.models import Episode

__all__ = ["DATE_LIFT", "Span", "date_lift", "episodes_within", "parse_asked_at", "spans_in"]

#: What being written when the question says adds to an episode's ranking
#: score (standard deviations of closeness; a rare word matched counts about
#: 4): chosen by bench/memory_recall.py --dated (figures in bench/README.md).
DATE_LIFT = 4.0
#: Episodes whose dates are read, in ``CONTEXT_RETRIEVE_CANDIDATES``: the
#: newest only, a bounded read for a question that names a date.
DATE_SCAN_FACTOR = 5

MONTHS = {
    name: n
    for n, names in enumerate(
        (
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
            ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
            ("october", "oct"), ("november", "nov"), ("december", "dec"),
        ),
        1,
    )
    for name in names
}  # fmt: skip
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a few": 3,
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Span:
    """``[start, end)``, aware datetimes."""

    start: datetime
    end: datetime

    def holds(self, moment: datetime) -> bool:
        return self.start <= moment < self.end


def parse_asked_at(value: str) -> datetime:
    """An ISO 8601 date and time with its UTC offset (``Z`` for UTC), else
    ``ValueError`` saying what is wanted."""
    problem = "must be an ISO 8601 date and time with a UTC offset, such as 2023-05-08T14:30:00+02:00"
    text = value.strip() if isinstance(value, str) else ""
    try:
        parsed = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        raise ValueError(problem) from None
    if "T" not in text.upper() and " " not in text or parsed.tzinfo is None:
        raise ValueError(problem)
    return parsed


_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_NUMBER = "|".join(sorted((re.escape(n) for n in NUMBERS), key=len, reverse=True))
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"
_PATTERNS = [
    ("iso", re.compile(r"\b((?:19|20)\d\d)-(\d\d)-(\d\d)\b")),
    ("day_month", re.compile(rf"\b{_DAY}(?:\s+of)?\s+({_MONTH})\.?(?:,?\s+{_YEAR})?\b")),
    ("month_day", re.compile(rf"\b({_MONTH})\.?\s+{_DAY}\b(?:,?\s+{_YEAR})?")),
    ("month_year", re.compile(rf"\b(?:in|during|of|since|from)\s+({_MONTH})(?:\s+{_YEAR})?\b")),
    ("month_year", re.compile(rf"\b({_MONTH})\s+{_YEAR}\b")),
    ("year", re.compile(rf"\b(?:in|during|of)\s+{_YEAR}\b")),
    ("ago", re.compile(rf"\b(\d+|{_NUMBER})\s+(day|week|month|year)s?\s+ago\b")),
    ("last", re.compile(r"\b(last|this|past|previous)\s+(week(?:end)?|month|year)\b")),
    ("weekday", re.compile(rf"\b(?:last|on|this past)\s+({'|'.join(WEEKDAYS)})\b")),
    ("relative_day", re.compile(r"\b(the day before yesterday|yesterday|today|tonight|this morning)\b")),
]


def spans_in(question: str, asked_at: datetime) -> list[Span]:
    """The spans of time ``question`` names, resolved against ``asked_at``
    (aware); empty when it names none. A text matched once is not read again
    by a later, looser pattern ("8 May 2023" is not also "May 2023")."""
    text = question.lower()
    today = asked_at.date()
    taken: list[tuple[int, int]] = []
    found: list[Span] = []
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(text):
            if any(match.start() < end and start < match.end() for start, end in taken):
                continue
            days = _resolve(kind, match, today)
            if days is None:
                continue
            taken.append(match.span())
            first, last = days
            zone = asked_at.tzinfo
            end = last + timedelta(days=1)
            found.append(Span(datetime.combine(first, time(), zone), datetime.combine(end, time(), zone)))
    return found


def _resolve(kind: str, match: re.Match[str], today: date) -> tuple[date, date] | None:
    """The first and last day of what ``match`` names, or None for no real date."""
    groups = match.groups()
    try:
        if kind == "iso":
            day = date(int(groups[0]), int(groups[1]), int(groups[2]))
            return day, day
        if kind == "day_month":
            return _day(int(groups[0]), MONTHS[groups[1]], groups[2], today)
        if kind == "month_day":
            return _day(int(groups[1]), MONTHS[groups[0]], groups[2], today)
    except ValueError:  # 31 February, month 13
        return None
    if kind == "month_year":
        month = MONTHS[groups[0]]
        if groups[0] == "may" and groups[1] is None and not match.group(0).startswith(("in ", "during ")):
            return None  # "of may" / "since may": too often the verb
        year = int(groups[1]) if groups[1] else (today.year if month <= today.month else today.year - 1)
        return _month(year, month)
    if kind == "year":
        year = int(groups[0])
        return date(year, 1, 1), date(year, 12, 31)
    if kind == "ago":
        return _ago(NUMBERS.get(groups[0]) or int(groups[0]), groups[1], today)
    if kind == "last":
        return _last(groups[0], groups[1], today)
    if kind == "weekday":
        back = (today.weekday() - WEEKDAYS.index(groups[0])) % 7 or 7
        day = today - timedelta(days=back)
        return day, day
    back = {"the day before yesterday": 2, "yesterday": 1}.get(groups[0], 0)
    day = today - timedelta(days=back)
    return day, day


def _day(day: int, month: int, year: str | None, today: date) -> tuple[date, date]:
    if year:
        found = date(int(year), month, day)
    else:
        found = date(today.year, month, day)
        if found > today:
            found = date(today.year - 1, month, day)
    return found, found


def _month(year: int, month: int) -> tuple[date, date]:
    first = date(year, month, 1)
    following = date(year + (month == 12), month % 12 + 1, 1)
    return first, following - timedelta(days=1)


def _ago(count: int, unit: str, today: date) -> tuple[date, date] | None:
    if count <= 0 or count > 200:
        return None
    if unit == "day":
        day = today - timedelta(days=count)
        return day, day
    if unit == "week":
        # That week, a few days either side: "two weeks ago" is rarely to the day.
        middle = today - timedelta(weeks=count)
        return middle - timedelta(days=4), middle + timedelta(days=4)
    if unit == "month":
        months = today.year * 12 + today.month - 1 - count
        return _month(months // 12, months % 12 + 1)
    return date(today.year - count, 1, 1), date(today.year - count, 12, 31)


def _last(which: str, unit: str, today: date) -> tuple[date, date]:
    current = which == "this"
    if unit == "weekend":
        back = (today.weekday() - 5) % 7  # to the last Saturday, today's included
        saturday = today - timedelta(days=back if back or current else 7)
        return saturday, saturday + timedelta(days=1)
    if unit == "week":
        monday = today - timedelta(days=today.weekday()) - timedelta(weeks=0 if current else 1)
        return monday, monday + timedelta(days=6)
    if unit == "month":
        months = today.year * 12 + today.month - 1 - (0 if current else 1)
        return _month(months // 12, months % 12 + 1)
    year = today.year - (0 if current else 1)
    return date(year, 1, 1), date(year, 12, 31)


def episodes_within(session_pk: int, spans: list[Span], scan: int) -> tuple[set[int], int]:
    """Which of the session's newest ``scan`` episodes were written within
    one of ``spans``, and how many were read: one walk of the ``(session,
    id)`` index, newest first, bounded by ``scan`` whatever the session's length."""
    if not spans or scan <= 0:
        return set(), 0
    rows = list(Episode.objects.for_session(session_pk).newest_first().values_list("pk", "created_at")[:scan])
    return {pk for pk, created in rows if any(span.holds(created) for span in spans)}, len(rows)


def date_lift(session_pk: int, question: str, asked_at: datetime | None) -> dict[int, float]:
    """Points added to the ranking score of each episode written when the
    question says (``retrieval.PendingRanking.hits``); none for a question
    that names no date, or whose dates hold most of what is compared (a lift
    for all is a lift for none)."""
    spans = spans_in(question, asked_at or timezone.now())
    if not spans:
        return {}
    scan = settings.CONTEXT_RETRIEVE_CANDIDATES * DATE_SCAN_FACTOR
    within, read = episodes_within(session_pk, spans, scan)
    if len(within) * 2 > read:
        return {}
    return {pk: DATE_LIFT for pk in within}

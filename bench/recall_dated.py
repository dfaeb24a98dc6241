"""``--dated``: the non-date questions again, each also saying when the fact
was told, relative to the day the questions are asked (the day after the
conversation's last exchange), as people ask "what did I tell you last
week about ...": in turn "N days/weeks/months ago" (or "yesterday"), "in
May", "on 8 May 2023". What ``sessions_app.question_dates`` resolves and
the context's date lift matches against the exchanges' dates."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, datetime, timedelta

from bench.recall_data import DATE, Conversation, Question, long_date, words

NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def asked_at(conversation: Conversation) -> datetime:
    """When the questions are asked: a day after the last exchange, same hour and offset."""
    return conversation.exchanges[-1].created_at + timedelta(days=1)


def when(told: date, asked: date, style: int) -> str:
    """``told`` as said on ``asked``: relative (style 0), by its month (1), by its date (2)."""
    if style == 1:
        return f"in {told:%B}"
    if style == 2:
        return f"on {long_date(told)}"
    days = (asked - told).days
    if days == 1:
        return "yesterday"
    if days < 7:
        return f"{_number(days)} days ago"
    if days < 35:
        weeks = round(days / 7)
        return f"{_number(weeks)} week{'s' * (weeks > 1)} ago"
    months = asked.year * 12 + asked.month - (told.year * 12 + told.month)
    return f"{_number(months)} month{'s' * (months > 1)} ago"


def _number(n: int) -> str:
    return NUMBER_WORDS[n] if n < len(NUMBER_WORDS) else str(n)


def dated(conversation: Conversation) -> list[Question]:
    asked = asked_at(conversation).date()
    questions = []
    for n, question in enumerate(q for q in conversation.questions if q.kind != DATE):
        holder = next(
            e
            for e in conversation.exchanges
            if all(answer in words(e.user_input + " " + e.response) for answer in question.answers)
        )
        phrase = when(holder.created_at.date(), asked, n % 3)
        text = f"{phrase[0].upper()}{phrase[1:]} I told you this: {question.text}"
        questions.append(replace(question, text=text))
    return questions

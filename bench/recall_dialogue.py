"""Long conversations of other shapes than bench/recall_synthetic.py's, for
``bench/memory_recall.py --set dialogue``.

recall_synthetic.py has one shape: a user tells an assistant short facts, each
alone in its user turn, and the replies are short filler. Retrieval is
judged on a held-out benchmark of long multi-session conversations, so this
set is shaped like the public ones, to check a change on data it was not
tuned on:

- odd-numbered conversations (as LoCoMo): two friends chat in dated sessions
  days or weeks apart; an episode's ``user_input`` is one friend's message,
  its ``response`` the other's reply. Either friend tells facts, mid-message
  among other sentences; both names run through the whole chat, so a name
  is a common word; questions name the friend ("Where does Noor work now?").
- even-numbered conversations (as LongMemEval): a user and an assistant
  whose answers are long (150 to 400 words of advice on the request). The
  user's facts come in passing inside a longer request, the assistant
  sometimes restates them, and one thing asked about is the assistant's own
  recommendation. Questions are in the first person.

Questions ask for facts in other words than they were told, for values
changed later (the answer is the newest), for dates, and a few need two
exchanges: "my neighbour Leandro" early and "Leandro has just qualified as a
locksmith" later; "What does my neighbour do for work?" shares words only
with the first, while the answer words are the second's. These count as
facts. Distractors share the question's words with another value (a
friend's sister, a colleague's car). The last fifth is filler only.

Events are told in relative time ("two days ago", "last Saturday") and
their date is counted back from the session's. recall() in memory_recall.py
checks a date as written, so the date is also written out in the exchange,
by the other side confirming it or by the teller, as people do.

The facts and word lists are in bench/data/dialogue.json (read by
bench/recall_facts.py), the everyday text in bench/data/dialogue_filler.json
(bench/dialogue_filler.py). Everything comes from a seeded
``random.Random``: the same seed and sizes give the same text, dates and
questions. ``check`` verifies every conversation: each answer is in its
text, none in its last fifth.
"""

from __future__ import annotations

import random
from datetime import date

from bench import dialogue_filler as filler
from bench.datafiles import load
from bench.recall_data import (
    Conversation,
    Draw,
    Exchange,
    Line,
    check,
    exchange_times,
    plant,
    session_calendar,
)
from bench.recall_facts import make_facts

#: The first day a conversation may start from (within 25 days of it).
FIRST_DAY = date(2023, 1, 2)
DATA = load("dialogue")
# The facts' values (none shared with bench/data/synthetic.json), and the filler's people.
POOLS = {**DATA["pools"], "person": filler.SLOTS["person"]}


# --- putting it together ------------------------------------------------------------------


def friends_texts(
    rng: random.Random, a: str, b: str, calendar: list[tuple[date, int]], planted: dict[int, Line]
) -> list[tuple[str, str]]:
    """(message, reply) of each exchange: a greeting opens each session, a goodbye closes it."""
    texts = []
    position = 0
    for _, size in calendar:
        for i in range(size):
            line = planted.get(position)
            told = line.text if line and line.by_user else ""
            answered = (line.echo or ("" if line.by_user else line.text)) if line else ""
            topic, known, used = filler.chat_topic(rng), {}, set()
            ends = {"greeting": i == 0, "farewell": i == size - 1}
            message = filler.chat_message(rng, a, b, topic, known, used, replying=False, insert=told, **ends)
            reply = filler.chat_message(rng, b, a, topic, known, used, replying=True, insert=answered, **ends)
            texts.append((message, reply))
            position += 1
    return texts


def assistant_texts(rng: random.Random, total: int, planted: dict[int, Line]) -> list[tuple[str, str]]:
    texts = []
    for position in range(total):
        line = planted.get(position)
        topic = (line.topic if line else "") or filler.advice_topic(rng)
        if line is None:
            texts.append((filler.advice_request(rng, topic), filler.advice_reply(rng, topic)))
            continue
        request = filler.advice_request(
            rng, topic, passing=line.text if line.by_user else "", request=line.request
        )
        reply = filler.advice_reply(rng, topic, insert=line.echo if line.by_user else line.text)
        texts.append((request, reply))
    return texts


def make_conversation(seed: int, number: int, total: int) -> Conversation:
    rng = random.Random(f"dialogue/{seed}/{number}/{total}")
    draw = Draw(rng)
    friends = number % 2 == 1
    user = draw(POOLS["speakers"])
    if friends:
        other = draw(POOLS["speakers"])
        facts = make_facts(draw, DATA["friends"], POOLS, (user, other))
        calendar = session_calendar(
            rng, total, first=FIRST_DAY, start_within=25, sizes=(12, 30), gaps=(5, 24)
        )
    else:
        facts = make_facts(draw, DATA["assistant"], POOLS)
        calendar = session_calendar(rng, total, first=FIRST_DAY, start_within=25, sizes=(3, 12), gaps=(1, 9))
    days = [day for day, size in calendar for _ in range(size)]
    planted, questions = plant(rng, facts, days)
    if friends:
        texts = friends_texts(rng, user, other, calendar, planted)
    else:
        texts = assistant_texts(rng, total, planted)
    sessions: list[list[Exchange]] = []
    position = 0
    for day, size in calendar:
        times = exchange_times(rng, day, size, hours=(17, 20), pause=(30, 240))
        sessions.append([Exchange(*texts[position + i], created_at=times[i]) for i in range(size)])
        position += size
    shape = "friends" if friends else "assistant"
    conversation = Conversation(
        key=f"dialogue ({shape}), seed {seed} #{number} n={total}",
        user_name=user,
        sessions=sessions,
        questions=questions,
    )
    check(conversation, quiet_tail=0.2)
    return conversation


def make_conversations(seed: int, count: int, exchanges: int) -> list[Conversation]:
    """``count`` conversations of ``exchanges`` exchanges each, all from ``seed``:
    odd-numbered ones two friends, even-numbered ones a user and an assistant."""
    return [make_conversation(seed, number, exchanges) for number in range(1, count + 1)]

"""Synthetic personal-assistant conversations with planted facts:
``bench/memory_recall.py --set synthetic``.

A user tells an assistant facts about their life, one to a turn, in
sessions days or weeks apart (a sister's city, a dog's breed, an allergy, a
password, appointments); some change later (a new employer, a new car), and
similar facts about other people are mixed in as distractors. Everything else
is chit-chat with short replies. The facts, word lists and chit-chat are in
bench/data/synthetic.json (bench/recall_facts.py reads its facts).
"""

from __future__ import annotations

import random

from bench.datafiles import load
from bench.recall_data import Conversation, Draw, Exchange, exchange_times, plant, session_calendar
from bench.recall_facts import make_facts

DATA = load("synthetic")
FILLER: dict[str, dict[str, list[str]]] = DATA["filler"]
MIN_WORDS, MAX_WORDS = 30, 120


def assistant_reply(rng: random.Random, name: str, opener: str, body: list[str]) -> str:
    """A reply of 30 to 120 words: an opener naming the user, the given
    sentences, then small talk until it is long enough."""
    sentences = [opener.format(name=name)] + body
    target = rng.randint(MIN_WORDS + 5, MAX_WORDS - 30)
    extra = rng.sample(DATA["small_talk"], len(DATA["small_talk"]))
    while sum(len(s.split()) for s in sentences) < target and extra:
        sentences.append(extra.pop())
    text = " ".join(sentences)
    return " ".join(text.split()[:MAX_WORDS])


def filler_exchange(rng: random.Random, name: str) -> tuple[str, str]:
    topic = FILLER[rng.choice(sorted(FILLER))]
    body = rng.sample(topic["answers"], rng.randint(2, 4))
    return rng.choice(topic["questions"]), assistant_reply(rng, name, rng.choice(DATA["openers"]), body)


def make_conversation(seed: int, number: int, total: int) -> Conversation:
    rng = random.Random(f"{seed}/{number}/{total}")
    draw = Draw(rng)
    name = draw(DATA["pools"]["names"])
    calendar = session_calendar(rng, total)
    days = [day for day, size in calendar for _ in range(size)]
    planted, questions = plant(rng, make_facts(draw, DATA, DATA["pools"]), days)

    texts: list[tuple[str, str]] = []
    for position in range(total):
        if position in planted:
            opener = rng.choice(DATA["acknowledgements"])
            texts.append((planted[position].text, assistant_reply(rng, name, opener, [])))
        else:
            texts.append(filler_exchange(rng, name))

    sessions: list[list[Exchange]] = []
    position = 0
    for day, size in calendar:
        times = exchange_times(rng, day, size)
        sessions.append([Exchange(*texts[position + i], created_at=times[i]) for i in range(size)])
        position += size
    key = f"seed {seed} #{number} n={total}"
    return Conversation(key=key, user_name=name, sessions=sessions, questions=questions)


def make_conversations(seed: int, count: int, exchanges: int) -> list[Conversation]:
    """``count`` conversations of ``exchanges`` exchanges each, all from ``seed``."""
    return [make_conversation(seed, number, exchanges) for number in range(1, count + 1)]

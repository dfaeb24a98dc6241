"""The everyday text of bench/recall_dialogue.py: friends' chat messages and
an assistant's long answers, composed from the templates with slots and the
word lists of bench/data/dialogue_filler.json.

Two friends talk about work, family, food, weekends and the rest; a user asks
an assistant for help with meals, money, travel, sleep and so on, and gets
150 to 400 words of advice back. Slots ({dish}, {veg}, {person}) are filled
from word lists, so a template seldom comes out twice the same, and the
vocabulary is large enough that neither word matching nor sentence vectors
find an old fact by its rare words alone.

What filler must never say: the values facts are drawn from (names, cities,
jobs, instruments...: recall_dialogue.check refuses a conversation whose
last fifth holds an answer), and no dates (no month names, no day numbers),
so only a fact can answer a date question.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from bench.datafiles import load

# --- slots ------------------------------------------------------------------------
# A slot named with a trailing digit ({veg2}) takes another value of the same list.

DATA = load("dialogue_filler")
SLOTS: dict[str, list[str]] = DATA["slots"]

FIELD = re.compile(r"\{(\w+)\}")


def fill(rng: random.Random, template: str, known: dict[str, str], *, capital: bool = True) -> str:
    """``template`` with its slots filled; ``known`` keeps the values chosen
    so far (and the speakers' names), so one exchange talks about one dish."""

    def value(match: re.Match[str]) -> str:
        name = match[1]
        if name not in known:
            base = name.rstrip("0123456789")
            taken = {v for k, v in known.items() if k.rstrip("0123456789") == base}
            known[name] = rng.choice([v for v in SLOTS[base] if v not in taken])
        return known[name]

    text = FIELD.sub(value, template)
    return text[0].upper() + text[1:] if capital else text


def lower_first(text: str) -> str:
    """A sentence's start made to follow on from another ("Anyway, we're..."), "I" kept."""
    first = text.split(" ", 1)[0]
    return text if first == "I" or first.startswith("I'") else text[:1].lower() + text[1:]


def capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


# --- two friends chatting -----------------------------------------------------------
# {me} is the one writing, {you} the other.


@dataclass(frozen=True, slots=True)
class ChatTopic:
    news: list[str]  # something that happened or is going on
    replies: list[str]  # a reaction to the other's news on this topic
    asks: list[str]  # a question to the other


CHAT = {topic: ChatTopic(**bank) for topic, bank in DATA["chat"].items()}
REACTIONS: list[str] = DATA["reactions"]
CHAT_ASKS: list[str] = DATA["chat_asks"]
GREETINGS: list[str] = DATA["greetings"]
GREETING_REPLIES: list[str] = DATA["greeting_replies"]
FAREWELLS: list[str] = DATA["farewells"]
FAREWELL_REPLIES: list[str] = DATA["farewell_replies"]


def chat_topic(rng: random.Random) -> str:
    return rng.choice(sorted(CHAT))


def chat_message(
    rng: random.Random,
    me: str,
    you: str,
    topic: str,
    known: dict[str, str],
    used: set[str],
    *,
    replying: bool,
    greeting: bool = False,
    farewell: bool = False,
    insert: str = "",
) -> str:
    """One friend's message: news (or, ``replying``, a reaction to the other's
    news and some of one's own), perhaps a question back. ``insert`` is
    a planted sentence, put among the others rather than first or last.
    ``known`` carries the exchange's slot values, so a reply speaks of the
    dish the message named; ``used``, its templates, so a reply does not
    repeat the message."""
    bank = CHAT[topic]
    names = {"me": me, "you": you}
    own = dict(names)  # one's own news takes fresh values

    def say(template: str, values: dict[str, str]) -> str:
        values.update(names)
        return fill(rng, template, values)

    def pick(options: list[str], count: int = 1) -> list[str]:
        fresh = [o for o in options if o not in used]
        chosen = rng.sample(fresh, min(count, len(fresh)))
        used.update(chosen)
        return chosen

    said = []
    if greeting:
        said.append(say(rng.choice(GREETING_REPLIES if replying else GREETINGS), {}))
    if replying:  # mostly a reaction to what the message said, else a general one
        on_topic = [t for t in bank.replies if set(FIELD.findall(t)) <= known.keys()]
        said += [say(t, known) for t in pick(on_topic if on_topic and rng.random() < 0.7 else REACTIONS)]
    news = pick(bank.news, rng.randint(0 if replying else 1, 2))
    said += [say(template, own if replying else known) for template in news]
    if rng.random() < 0.5 or (replying and not news) or (insert and len(said) < 2):
        said += [say(t, known) for t in pick(bank.asks + CHAT_ASKS)]
    if insert:  # after the first sentence, before the last
        said.insert(rng.randint(1, len(said) - 1) if len(said) > 1 else 1, insert)
    if farewell:
        said.append(say(rng.choice(FAREWELL_REPLIES if replying else FAREWELLS), {}))
    return " ".join(said)


# --- a user and an assistant -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AdviceTopic:
    requests: list[tuple[str, str]]  # (what is going on, without a full stop; the question, lower case)
    advice: list[str]  # sentences of an answer


ADVICE = {
    topic: AdviceTopic([(lead, ask) for lead, ask in bank["requests"]], bank["advice"])
    for topic, bank in DATA["advice"].items()
}
GENERAL_ADVICE: list[str] = DATA["general_advice"]
OPENERS: list[str] = DATA["openers"]
LIST_LEADS: list[str] = DATA["list_leads"]
CLOSINGS: list[str] = DATA["closings"]
REQUEST_CONTEXT: list[str] = DATA["request_context"]
MIN_REPLY_WORDS, MAX_REPLY_WORDS = 150, 400


def advice_topic(rng: random.Random) -> str:
    return rng.choice(sorted(ADVICE))


def advice_request(rng: random.Random, topic: str, *, passing: str = "", request: str = "") -> str:
    """The user's request on ``topic``; ``passing`` (a clause, lower case, no
    full stop) is a fact mentioned along the way, as people do."""
    known: dict[str, str] = {}
    if request:
        lead, ask = request, ""
    else:
        lead, ask = (fill(rng, part, known, capital=False) for part in rng.choice(ADVICE[topic].requests))
    extra = " " + rng.choice(REQUEST_CONTEXT) if rng.random() < 0.4 else ""
    if not passing:
        return f"{lead}. {capitalised(ask)}{extra}" if ask else lead
    style = rng.randrange(4)
    if style == 0 or not ask:
        return f"{lead} — by the way, {passing} — {ask}{extra}"
    if style == 1:
        return f"{capitalised(passing)}. Anyway, {lower_first(lead)}, so {ask}{extra}"
    if style == 2:
        return f"{lead}. {capitalised(ask)} (Unrelated, but {passing}.){extra}"
    return f"Quick one. {lead}. Oh, and {passing}, in case it matters. {capitalised(ask)}"


def advice_reply(rng: random.Random, topic: str, *, insert: str = "") -> str:
    """An answer of 150 to 400 words: an opener, advice on the topic (a
    numbered list or paragraphs) with a little general advice mixed in, and
    a closing line. ``insert`` is a planted sentence (a restated fact, a date
    worked out, a recommendation), said where an assistant would say it:
    straight after the opener, or with the closing line."""
    known: dict[str, str] = {}
    target = rng.randint(MIN_REPLY_WORDS + 10, MAX_REPLY_WORDS - 35)
    opener, closing = rng.choice(OPENERS), rng.choice(CLOSINGS)
    if insert and rng.random() < 0.6:
        opener = f"{opener} {insert}"
    elif insert:
        closing = f"{insert} {closing}"
    pool = rng.sample(ADVICE[topic].advice, len(ADVICE[topic].advice))
    if rng.random() < 0.5:  # now and then a general point, after the first few
        pool.insert(rng.randint(3, 12), rng.choice(GENERAL_ADVICE))
    body: list[str] = []
    length = len(opener.split()) + len(closing.split())
    while length < target and pool:
        sentence = fill(rng, pool.pop(0), known)
        body.append(sentence)
        length += len(sentence.split())
    as_list = rng.random() < 0.5
    chunks, start = [], 0
    while start < len(body):  # list points of one or two sentences, paragraphs of two to six
        size = rng.choice((1, 2)) if as_list else rng.randint(2, 6)
        chunks.append(" ".join(body[start : start + size]))
        start += size
    if as_list:
        points = "\n".join(f"{n}. {chunk}" for n, chunk in enumerate(chunks, 1))
        return f"{opener} {rng.choice(LIST_LEADS)}\n\n{points}\n\n{closing}"
    return "\n\n".join([opener, *chunks, closing])

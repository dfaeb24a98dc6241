"""A person building a software project with a coding assistant over months:
``bench/memory_recall.py --set assistant``.

Shaped like the held-out benchmark of assistant conversations: by default
160 exchanges and about 100,000 tokens a conversation, in evening sessions a
day or a few apart. The person asks about setup, dependencies, bugs,
deployment, the database, tests and the rest, often pasting a traceback, a
log or a command; the replies run from a couple of hundred tokens to a
couple of thousand: steps, lists, code blocks. Facts and numbers come
inside long messages, among other things said (the project's name, a port,
the server's memory, a partner's job); some change later (the host, the CI,
the customers); dates are said as dates or as "two days ago"; standing
instructions and preferences are said once; the assistant recommends things
too. At the end every fact is asked about in other words: facts, updated
facts, dates, ordering and instructions.

A few facts are told in the last exchanges (a bill, a son's name, an
instruction: about a tenth of the questions), so the recent window has
something to give; the rest of the last tenth answers nothing. Facts and
their word lists are in bench/data/assistant.json (read by
bench/recall_facts.py), the everyday text in bench/data/assistant_filler.json;
``check_rare`` refuses a conversation whose filler says an answer word.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import replace
from datetime import date
from typing import Any

from bench.datafiles import load
from bench.recall_data import (
    DATE,
    Conversation,
    Draw,
    Exchange,
    Line,
    check,
    exchange_times,
    plant,
    session_calendar,
    words,
)
from bench.recall_facts import make_facts

DATA = load("assistant")
FILLER = load("assistant_filler")
SLOTS: dict[str, list[str]] = FILLER["slots"]
TOPICS: dict[str, dict[str, Any]] = FILLER["topics"]
GENERAL: dict[str, list[str]] = FILLER["general"]
FIRST_DAY = date(2023, 2, 6)
# {model}, {model2}: a slot, and another value of the same list; other braces (code) stay.
SLOT = re.compile(r"\{([a-z_]+?)(\d*)\}")
#: Reply sizes, in estimated tokens (characters / 4), and how often each comes.
REPLY_SIZES = ((150, 350), (350, 700), (700, 1300), (1300, 2000))
REPLY_SIZE_WEIGHTS = (30, 40, 22, 8)
CHARS_PER_TOKEN = 4
#: A reply's blocks after its first paragraph, and how often each kind comes.
BLOCKS, BLOCK_WEIGHTS = ("paragraph", "steps", "bullets", "code"), (3, 3, 2, 3)
#: Messages without a planted fact that still come with context (and often a paste).
LONG_MESSAGES = 0.45
#: An answer word may be said in at most this many exchanges: its lines, its echo, its update.
MOST_SAID = 3
#: No answer in the last tenth of a conversation but those of the facts told
#: there on purpose (window ``recent``): the newest exchanges answer only those.
QUIET_TAIL = 0.1
ATTEMPTS = 10


class Writer:
    """One exchange's text: ``known`` keeps its slot values, so the reply speaks
    of the model the message named."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.known: dict[str, str] = {}

    def fill(self, template: str) -> str:
        def value(match: re.Match[str]) -> str:
            base, name = match[1], match[1] + match[2]
            if base not in SLOTS:
                return match[0]
            if name not in self.known:
                taken = {v for k, v in self.known.items() if k.rstrip("0123456789") == base}
                self.known[name] = self.rng.choice([v for v in SLOTS[base] if v not in taken])
            return self.known[name]

        return SLOT.sub(value, template)

    def pick(self, options: list[Any], low: int, high: int) -> list[Any]:
        return self.rng.sample(options, min(len(options), self.rng.randint(low, high)))

    def message(self, topic: str, told: str = "") -> str:
        """The user's message: a question, or (always when ``told``, a fact said
        in passing) context sentences around it, often with a paste, then the question."""
        bank = TOPICS[topic]
        ask = self.fill(self.rng.choice(bank["asks"]))
        if not told and self.rng.random() >= LONG_MESSAGES:
            return ask
        said = [self.fill(s) for s in self.pick(bank["contexts"], 2, 4)]
        if self.rng.random() < 0.4:
            said.append(self.rng.choice(GENERAL["contexts"]))
        if told:
            said.insert(self.rng.randint(0, len(said)), told)
        parts = [" ".join(said)]
        if self.rng.random() < 0.5:
            paste = self.rng.choice(bank["pastes"])
            parts.append("```\n" + "\n".join(self.fill(line) for line in paste) + "\n```")
        return "\n\n".join([*parts, ask])

    def reply(self, topic: str, insert: str = "", recommendation: str = "") -> str:
        """The assistant's answer, about as long as a size drawn from
        ``REPLY_SIZES``: an opener, blocks of prose, numbered steps, bullets
        and code on the topic (then on another when it runs out),
        and a closing line. ``insert`` (a fact restated) follows the opener or
        precedes the closing; ``recommendation`` (a fact the assistant tells)
        is its first paragraph."""
        rng = self.rng
        low, high = rng.choices(REPLY_SIZES, weights=REPLY_SIZE_WEIGHTS)[0]
        target = rng.randint(low, high) * CHARS_PER_TOKEN
        opener, closing = rng.choice(GENERAL["openers"]), rng.choice(GENERAL["closings"])
        if insert and rng.random() < 0.6:
            opener, insert = f"{opener} {insert}", ""
        blocks = [opener] + ([recommendation] if recommendation else [])
        material = Material(rng, topic)
        size = sum(len(b) for b in blocks) + len(closing)
        kind = ""
        while size < target:
            kind = "paragraph" if len(blocks) == 1 else self.next_kind(after=kind)
            block = self.block(material, kind, first=len(blocks) == 1)
            blocks.append(block)
            size += len(block)
        blocks.append(f"{insert} {closing}" if insert else closing)
        return "\n\n".join(blocks)

    def next_kind(self, *, after: str) -> str:
        """A block's kind; code never follows code (it comes with words around it)."""
        kinds = [(k, w) for k, w in zip(BLOCKS, BLOCK_WEIGHTS, strict=True) if not (k == after == "code")]
        return self.rng.choices([k for k, _ in kinds], [w for _, w in kinds])[0]

    def block(self, material: Material, kind: str, *, first: bool) -> str:
        rng = self.rng
        heading = "" if first or rng.random() > 0.25 else rng.choice(GENERAL["headings"]) + "\n\n"
        if kind == "steps":
            steps = [self.fill(s) for s in material.take("steps", rng.randint(3, 7))]
            numbered = "\n".join(f"{n}. {step}" for n, step in enumerate(steps, 1))
            return f"{heading}{rng.choice(GENERAL['list_leads'])}\n\n{numbered}"
        if kind == "bullets":
            points = [self.fill(p) for p in material.take("points", rng.randint(3, 5))]
            return heading + "\n".join(f"- {point}" for point in points)
        if kind == "code":
            code = material.take("code", 1)[0]
            lines = "\n".join(self.fill(line) for line in code["lines"])
            return f"{heading}{rng.choice(GENERAL['code_leads'])}\n\n```{code['lang']}\n{lines}\n```"
        return heading + " ".join(self.fill(p) for p in material.take("points", rng.randint(2, 4)))


class Material:
    """What a reply may still say: its topic's steps, points and code and a
    few general points, each once, then a topic's drawn at random when a
    long reply has used them up."""

    def __init__(self, rng: random.Random, topic: str) -> None:
        self.rng = rng
        self.left: dict[str, list[Any]] = {}
        self.add(topic)
        self.left["points"] += rng.sample(GENERAL["points"], 4)

    def add(self, topic: str) -> None:
        for kind in ("steps", "points", "code"):
            options = TOPICS[topic][kind]
            self.left[kind] = self.left.get(kind, []) + self.rng.sample(options, len(options))

    def take(self, kind: str, count: int) -> list[Any]:
        if len(self.left[kind]) < count:
            self.add(self.rng.choice(sorted(TOPICS)))
        taken, self.left[kind] = self.left[kind][:count], self.left[kind][count:]
        return taken


def texts(rng: random.Random, total: int, planted: dict[int, Line]) -> list[tuple[str, str]]:
    """(message, reply) of each exchange, the planted lines said in them."""
    found = []
    for position in range(total):
        line = planted.get(position)
        writer = Writer(rng)
        topic = (line.topic if line else "") or rng.choice(sorted(TOPICS))
        if line is None:
            found.append((writer.message(topic), writer.reply(topic)))
        elif line.by_user:
            found.append((writer.message(topic, told=line.text), writer.reply(topic, insert=line.echo)))
        else:
            message = line.request or writer.message(topic)
            found.append((message, writer.reply(topic, recommendation=line.text)))
    return found


def check_rare(conversation: Conversation) -> None:
    """No answer word said in more than ``MOST_SAID`` exchanges: the filler never says one."""
    said: Counter[str] = Counter()
    for exchange in conversation.exchanges:
        said.update(words(exchange.user_input + " " + exchange.response))
    answers = {a for q in conversation.questions if q.kind != DATE for a in q.answers}
    common = {a: said[a] for a in answers if said[a] > MOST_SAID}
    if common:
        raise AssertionError(f"{conversation.key}: answer words said too often: {common}")


def make_conversation(seed: int, number: int, total: int) -> Conversation:
    """Conversation ``number`` of ``seed``. One whose answer lands in its last
    tenth by chance (a date ahead falling on a late session's day, which that
    session's date label then gives away) is drawn again, from the next seed
    ("/1", "/2"... after the first's)."""
    key = f"assistant, seed {seed} #{number} n={total}"
    for attempt in range(ATTEMPTS):
        rng = random.Random(f"assistant/{seed}/{number}/{total}/{attempt}")
        conversation, told_late = compose(rng, key, total)
        early = [q for q in conversation.questions if q.text not in told_late]
        quiet = replace(conversation, questions=early)
        try:
            check(conversation, quiet_tail=0)  # every answer said, none in its question
            check(quiet, quiet_tail=QUIET_TAIL)
        except AssertionError:
            if attempt == ATTEMPTS - 1:
                raise
            continue
        check_rare(conversation)
        return conversation
    raise AssertionError("unreachable")


def compose(rng: random.Random, key: str, total: int) -> tuple[Conversation, set[str]]:
    """A conversation, and the questions about facts told in its last
    exchanges (``recent``), which a buffer of the newest exchanges answers."""
    draw = Draw(rng)
    user = draw(DATA["pools"]["people"])
    facts = make_facts(draw, DATA, DATA["pools"])
    calendar = session_calendar(rng, total, first=FIRST_DAY, start_within=20, sizes=(3, 12), gaps=(1, 8))
    days = [day for day, size in calendar for _ in range(size)]
    planted, questions = plant(rng, facts, days)
    written = texts(rng, total, planted)
    sessions: list[list[Exchange]] = []
    position = 0
    for day, size in calendar:
        times = exchange_times(rng, day, size, hours=(18, 20), pause=(60, 420))
        sessions.append([Exchange(*written[position + i], created_at=times[i]) for i in range(size)])
        position += size
    recent = DATA["windows"]["recent"]
    told_late = {
        question
        for fact in facts
        if any(p.window == recent for p in fact.plants)
        for question in [fact.question, *(more[1] for more in fact.more)]
    }
    return Conversation(key=key, user_name=user, sessions=sessions, questions=questions), told_late


def make_conversations(seed: int, count: int, exchanges: int) -> list[Conversation]:
    """``count`` conversations of ``exchanges`` exchanges each, all from ``seed``."""
    return [make_conversation(seed, number, exchanges) for number in range(1, count + 1)]

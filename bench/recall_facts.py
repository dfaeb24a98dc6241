"""The facts of a recall probe set, built from its data file.

A set's data (bench/data/*.json) names its word lists (``pools``), where in
the conversation facts are told (``windows``, fractions of its length), and
its facts: a question, its answer, the lines that tell it and perhaps one
that imitates it (a distractor). Texts are templates whose ``{names}`` are
values drawn for the conversation (``{events.0.did}`` reaches into a drawn
list or object; a value's own text is filled again, so a drawn event's
question may name the teller). Values are drawn from the conversation's
random generator in the order the data lists them, so the same seed gives
the same text.

A fact (an entry of ``facts``):

- ``kind``, ``question``, ``told`` (lines in conversation order) and
  ``distractor`` (a line, told anywhere);
- ``values``: drawn before its lines (a set's own ``values`` are drawn
  first, for all its facts; an entry with only ``draw`` draws and tells nothing);
- ``answers``: names of values (a value may be a list, and its items
  templates), ``"told on"`` (the day of its first line), ``{"ahead": n}``
  (n days after it; ``"told": i``, after line i's), ``{"back": phrase}`` (the day an event
  told as "two days ago", "last Saturday"... happened), ``{"date": name}``
  (a drawn date; ``"year": false`` leaves its year out);
- ``more``: further questions on the same lines (``kind``, ``question``, ``answers``);
- ``teller`` (sets of two speakers, ``{t}`` telling and ``{o}`` the other):
  drawn at random, or ``"not <id>"``: the one who did not tell fact ``<id>``.

A value is a pool's name (a value not drawn before in the conversation;
``"women+men"`` joins pools), or ``{"number": [low, high]}``, ``{"pool": p,
"number": [low, high]}`` (the two written together: "heron42"),
``{"choice": p}`` (repeats allowed), ``{"sample": p, "count": n}``, or
``{"date": [year, [months], [days]]}``.

A line: ``text``, ``window``, ``by`` (``t``, ``o``, ``user``, ``assistant``;
the teller by default), ``echo`` (the other side's sentence about it),
``topic`` and ``request`` (the assistant's topic, the user's whole request).
A dated line, ``ahead``/``back`` with the value its ``{when}`` counts by, is
written on the day it is told; ``echoes`` names a pool of echoes to choose
one from then, ``as_reply`` its text when the teller writes the reply. In a
set with ``restatements``, each line draws whether its echo is said (half of
them), echoing lines first; ``plain`` lines draw nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from bench.recall_data import Draw, Fact, Line, Plant, date_words, fixed, long_date

Spec = Mapping[str, Any]
Answers = Callable[[list[date]], tuple[str, ...]]  # the plants' dates -> the answer words
FIELD = re.compile(r"\{([a-z_][a-z0-9_]*(?:\.[a-z0-9_]+)*)\}")
SATURDAY, SUNDAY = 5, 6


@dataclass(frozen=True, slots=True)
class Day:
    """A date as templates write it: ``{when.day_month}`` (8 May),
    ``{when.long}`` (8 May 2023), ``{when.spelled}`` (Monday 8 May 2023)."""

    date: date

    def __getitem__(self, key: str) -> str:
        day = self.date
        long = long_date(day)
        return {"day_month": f"{day.day} {day:%B}", "long": long, "spelled": f"{day:%A} {long}"}[key]


def article(word: str) -> str:
    """``word`` with its indefinite article: "an architect", "a florist"."""
    return ("an " if word[0].lower() in "aeiou" else "a ") + word


def days_back(phrase: str, day: date) -> int:
    """How many days before ``day`` the event told as ``phrase`` happened."""
    if phrase in ("last Saturday", "last weekend"):  # "last weekend" is its Saturday
        return (day.weekday() - SATURDAY) % 7 or 7
    if phrase == "last Sunday":
        return (day.weekday() - SUNDAY) % 7 or 7
    return {"yesterday": 1, "two days ago": 2, "three days ago": 3}[phrase]


def lookup(path: str, values: Mapping[str, Any]) -> Any:
    """The value ``path`` names: ``name``, or ``name.0.key`` inside a drawn list or object."""
    found: Any = values
    for part in path.split("."):
        found = found[int(part)] if isinstance(found, list) else found[part]
    return found


def fill(template: str, values: Mapping[str, Any]) -> str:
    """``template`` with its ``{names}`` replaced; ``{a_name}`` is the value with its article."""

    def value(match: re.Match[str]) -> str:
        name = match[1]
        if name.startswith("a_") and name not in values:
            return article(fill(str(values[name[2:]]), values))
        return fill(str(lookup(name, values)), values)

    return FIELD.sub(value, template)


class Facts:
    """The facts of one conversation of a set (``spec``), drawn with ``draw``."""

    def __init__(self, draw: Draw, spec: Spec, pools: Mapping[str, list[Any]], speakers: tuple[str, ...]):
        self.draw, self.rng, self.spec, self.pools = draw, draw.rng, spec, pools
        self.speakers = speakers  # (who writes user_input, who writes the response), or none
        self.values: dict[str, Any] = dict(spec.get("constants", {}))
        self.tellers: dict[str, str] = {}

    def pool(self, name: str) -> list[Any]:
        return [value for part in name.split("+") for value in self.pools[part]]

    def drawn(self, value: str | Spec) -> Any:
        if isinstance(value, str):
            return self.draw(self.pool(value))
        if "sample" in value:
            return self.rng.sample(self.pool(value["sample"]), value["count"])
        if "choice" in value:
            return self.rng.choice(self.pool(value["choice"]))
        if "pool" in value:
            word = self.draw(self.pool(value["pool"]))
            return f"{word}{self.rng.randint(*value['number'])}"
        if "number" in value:
            return self.rng.randint(*value["number"])
        year, months, days = value["date"]
        month = self.rng.randint(*months)
        return Day(date(year, month, self.rng.randint(*days)))

    def draw_values(self, values: Spec) -> None:
        for name, value in values.items():
            self.values[name] = self.drawn(value)

    def all(self) -> list[Fact]:
        self.draw_values(self.spec.get("values", {}))
        facts = []
        for entry in self.spec["facts"]:
            if "question" not in entry:
                self.draw_values(entry["draw"])
                continue
            self.choose_teller(entry)
            self.draw_values(entry.get("values", {}))
            facts.append(self.fact(entry))
        return facts

    def choose_teller(self, entry: Spec) -> None:
        if not self.speakers:
            return
        a, b = self.speakers
        if "teller" in entry:  # "not <id>"
            t = b if self.tellers[entry["teller"].removeprefix("not ")] == a else a
        else:
            t = a if self.rng.random() < 0.5 else b
        self.values.update(t=t, o=b if t == a else a)
        if "id" in entry:
            self.tellers[entry["id"]] = t

    def fact(self, entry: Spec) -> Fact:
        told = list(entry["told"])
        distractors = [entry["distractor"]] if "distractor" in entry else []
        # Echoing lines draw whether they are restated first, then the rest in
        # order: the order the set was first written in, so a seed's text stays.
        writes: dict[int, Callable[[date], Line]] = {}
        lines = [*told, *distractors]
        for index in sorted(range(len(lines)), key=lambda i: "echo" not in lines[i]):
            writes[index] = self.write(lines[index], dict(self.values))
        windows = self.spec["windows"]
        plants = [Plant(windows[line.get("window", "anywhere")], writes[i]) for i, line in enumerate(lines)]
        more = [
            (ask["kind"], fill(ask["question"], self.values), self.answers(ask["answers"], dict(self.values)))
            for ask in entry.get("more", [])
        ]
        return Fact(
            entry["kind"],
            plants[: len(told)],
            fill(entry["question"], self.values),
            self.answers(entry["answers"], dict(self.values)),
            plants[len(told) :],
            more,
        )

    def write(self, line: Spec, values: dict[str, Any]) -> Callable[[date], Line]:
        """What ``line`` says on the day it is told: written now, or that day when it is dated."""
        if "ahead" in line or "back" in line:
            return lambda day: self.line(line, {**values, "when": Day(self.when(line, values, day))})
        said = self.line(line, values)
        return lambda _day: said

    def when(self, line: Spec, values: Mapping[str, Any], day: date) -> date:
        if "ahead" in line:
            return day + timedelta(days=values[line["ahead"]])
        return day - timedelta(days=days_back(values[line["back"]], day))

    def line(self, line: Spec, values: Mapping[str, Any]) -> Line:
        by_user = self.by_user(line.get("by", "t"), values)
        restated = True
        if self.spec.get("restatements") and not line.get("plain"):
            restated = self.rng.random() < 0.5
        echo = fill(line.get("echo", ""), values) if restated else ""
        text = line["text"]
        if "echoes" in line and by_user:
            echo = fill(self.rng.choice(self.pools[line["echoes"]]), values)
        elif "as_reply" in line and not by_user:
            text = line["as_reply"]
        topic, request = (fill(line.get(key, ""), values) for key in ("topic", "request"))
        return Line(fill(text, values), by_user, echo, topic, request)

    def by_user(self, who: str, values: Mapping[str, Any]) -> bool:
        if who in ("user", "assistant"):
            return who == "user"
        return not self.speakers or values[who] == self.speakers[0]

    def answers(self, spec: Any, values: Mapping[str, Any]) -> Answers:
        if isinstance(spec, list):  # values, or lists of them, each a template
            found = [lookup(path, values) for path in spec]
            flat = [item for value in found for item in (value if isinstance(value, list) else [value])]
            return fixed(*(fill(str(item), values) for item in flat))
        if spec == "told on":
            return lambda dates: date_words(dates[0])
        if "ahead" in spec:  # of the day of the first line, or of line ``told``
            told = spec.get("told", 0)
            return lambda dates: date_words(dates[told] + timedelta(days=values[spec["ahead"]]))
        if "back" in spec:
            phrase = values[spec["back"]]
            return lambda dates: date_words(dates[0] - timedelta(days=days_back(phrase, dates[0])))
        return fixed(*date_words(values[spec["date"]].date, year=spec.get("year", True)))


def make_facts(
    draw: Draw, spec: Spec, pools: Mapping[str, list[Any]], speakers: tuple[str, ...] = ()
) -> list[Fact]:
    """The facts of one conversation of the set ``spec``: told by ``speakers``
    (two friends: who writes user_input, who the response) or by the user."""
    return Facts(draw, spec, pools, speakers).all()

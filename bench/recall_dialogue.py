"""Long conversations of other shapes than bench/recall_data.py's, for
``bench/memory_recall.py --set dialogue``.

recall_data.py has one shape: a user tells an assistant short facts, each
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

Everything comes from a seeded ``random.Random``: the same seed and sizes
give the same text, dates and questions. ``check`` verifies every
conversation: each answer is in its text, none in its last fifth.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta

from bench import dialogue_filler as filler
from bench.recall_data import (
    DATE,
    FACT,
    KINDS,
    UPDATED,
    Conversation,
    Draw,
    Exchange,
    Fact,
    Plant,
    Question,
    date_words,
    exchange_times,
    fixed,
    long_date,
    place,
    session_calendar,
    words,
)

#: The first day a conversation may start from (within 25 days of it).
FIRST_DAY = date(2023, 1, 2)

# --- value pools: none shared with recall_data.py or with the filler ------------------

SPEAKERS = [
    "Maelle",
    "Joaquin",
    "Saoirse",
    "Bruno",
    "Ayla",
    "Kenji",
    "Noor",
    "Tobias",
    "Ilse",
    "Rohan",
    "Vesna",
    "Anouk",
    "Mateo",
    "Greta",
    "Idris",
    "Solveig",
]
# Relatives, partners and acquaintances: a daughter is one of WOMEN, a brother one of MEN.
WOMEN = ["Mira", "Sigrid", "Odile", "Carmen", "Petra", "Zora", "Fenna", "Ottilie", "Raisa", "Margit", "Elke"]
MEN = ["Teodor", "Lazlo", "Benedikt", "Ferdinand", "Yusuf", "Henrik", "Leandro", "Casimir", "Evander", "Aldo"]
KIN = WOMEN + MEN
CITIES = [
    "Utrecht",
    "Aarhus",
    "Salzburg",
    "Trieste",
    "Ljubljana",
    "Nantes",
    "Turku",
    "Coimbra",
    "Brno",
    "Galway",
    "Innsbruck",
    "Seville",
    "Graz",
    "Malmo",
    "Antwerp",
    "Bilbao",
]
JOBS = [
    "architect",
    "sommelier",
    "locksmith",
    "cartographer",
    "translator",
    "beekeeper",
    "electrician",
    "optician",
    "archivist",
    "florist",
    "surveyor",
    "glazier",
    "upholsterer",
    "stenographer",
]
COMPANIES = ["Vantora", "Calderwood", "Meridia", "Pinecrest", "Solvane", "Harrowgate", "Ambervale", "Tessaly"]
SPECIES = ["tortoise", "ferret", "cockatiel", "gecko", "hamster", "parakeet", "chinchilla", "axolotl"]
PET_NAMES = ["Ziggy", "Clementine", "Marlowe", "Pippin", "Quincy", "Figaro", "Rascal", "Bobbin", "Wilbur"]
INSTRUMENTS = ["cello", "ukulele", "accordion", "banjo", "clarinet", "harp", "trombone", "mandolin", "oboe"]
SPORTS = ["fencing", "rowing", "archery", "judo", "lacrosse", "handball", "badminton", "waterpolo"]
PASTIMES = ["birdwatching", "bouldering", "orienteering", "kitesurfing", "falconry", "kayaking", "geocaching"]
FOODS = ["mushrooms", "aubergine", "celery", "mustard", "coriander", "lentils", "kiwi", "mango"]
DIETS = ["vegan", "vegetarian", "pescatarian", "flexitarian", "keto", "paleo"]
LANGUAGES = ["Portuguese", "Finnish", "Korean", "Dutch", "Greek", "Turkish", "Swahili", "Icelandic"]
CARS = ["Polo", "Kuga", "Tucson", "Qashqai", "Ceed", "Astra", "Megane", "Sportage", "Kodiaq", "Zafira"]
TRAILS = ["Rennsteig", "Malerweg", "Kungsleden", "Westweg", "Goldsteig", "Rheinsteig", "Hermannsweg"]
BUDGETS = ["4800", "5600", "6200", "7400", "8900", "9500", "10500", "11800"]  # euros, never a day

# Events with a date: what the teller did, and the question about it ("{who}": a name, or "I"),
# mostly in other words, as the facts' questions are.
EVENTS = [
    ("ran my first half marathon", "When did {who} run a half marathon?"),
    ("passed my driving test", "When did {who} get a driving licence?"),
    ("got the keys to our allotment", "When did {who} take over the vegetable plot?"),
    ("had two wisdom teeth taken out", "When did {who} have dental surgery?"),
    ("gave my first talk at a conference", "When did {who} first present at a conference?"),
    ("got my first tattoo", "When did {who} get inked for the first time?"),
    ("sang a solo at the choir concert", "When did {who} sing a solo?"),
    ("finished the charity bike ride to the coast", "When did {who} cycle to the seaside for charity?"),
    ("sold my first painting at the craft fair", "When did {who} first sell a piece of art?"),
    ("went up in a hot-air balloon", "When did {who} go on a balloon flight?"),
    ("swam across the lake for the lifeboat charity", "When did {who} do the open-water swim?"),
    ("handed in my thesis", "When did {who} submit the dissertation?"),
]

SATURDAY, SUNDAY = 5, 6


def days_back(phrase: str, day: date) -> int:
    """How many days before ``day`` the event told as ``phrase`` happened."""
    if phrase in ("last Saturday", "last weekend"):  # "last weekend" is its Saturday
        return (day.weekday() - SATURDAY) % 7 or 7
    if phrase == "last Sunday":
        return (day.weekday() - SUNDAY) % 7 or 7
    return {"yesterday": 1, "two days ago": 2, "three days ago": 3}[phrase]


RELATIVE = ["yesterday", "two days ago", "three days ago", "last Saturday", "last Sunday", "last weekend"]


def article(word: str) -> str:
    """``word`` with its indefinite article: "an architect", "a florist"."""
    return ("an " if word[0].lower() in "aeiou" else "a ") + word


def spelled(day: date) -> str:
    """``Saturday 11 March 2023``: a date as someone confirming it writes it."""
    return f"{day:%A} {long_date(day)}"


# --- facts ------------------------------------------------------------------------------
# Where facts are told (fractions of the conversation): the last fifth is
# filler only, so a buffer of recent exchanges cannot answer by luck.
EARLY, MIDDLE, ANYWHERE = (0.02, 0.35), (0.45, 0.78), (0.03, 0.78)


@dataclass(frozen=True, slots=True)
class Line:
    """What a planted exchange says besides its filler."""

    text: str  # the teller's: a sentence (friends) or a clause told in passing (user to assistant)
    by_user: bool = True  # told in user_input, else in the response
    echo: str = ""  # the other side's sentence about it, in the same exchange
    topic: str = ""  # the assistant's topic, when the fact needs one
    request: str = ""  # the user's whole request, when the fact needs one


Write = Callable[[date], Line]  # the exchange's date -> what it says
Answers = Callable[[list[date]], tuple[str, ...]]  # the plants' dates -> the answer words
# Plant and Fact are recall_data's, holding Lines here.


def at(window: tuple[float, float], line: Line | Write) -> Plant:
    return Plant(window, line if callable(line) else lambda _day: line)


Told = tuple[tuple[float, float], Line | Write]  # where, and what


def fact(kind: str, question: str, answers: Answers, *told: Told, distractor: Line | None = None) -> Fact:
    """A fact told in ``told`` (window, line), in order; its distractor anywhere."""
    distractors = [at(ANYWHERE, distractor)] if distractor else []
    return Fact(kind, [at(window, line) for window, line in told], question, answers, distractors)


def told_on(dates: list[date]) -> tuple[str, ...]:
    return date_words(dates[0])


def counted_back(phrase: str) -> Answers:
    """The date of an event told as ``phrase`` ("two days ago") on the plant's day."""
    return lambda dates: date_words(dates[0] - timedelta(days=days_back(phrase, dates[0])))


def ahead(days: int) -> Answers:
    return lambda dates: date_words(dates[0] + timedelta(days=days))


def friends_facts(draw: Draw, a: str, b: str) -> list[Fact]:
    """Facts of a chat between ``a`` (user_input) and ``b`` (response): each
    told by one of them, chosen at random, its distractor by the other, and
    asked about by name."""
    rng = draw.rng
    facts: list[Fact] = []

    def add(kind: str, question: str, answers: Answers, *told: Told, distractor: Line | None = None) -> None:
        facts.append(fact(kind, question, answers, *told, distractor=distractor))

    def teller() -> tuple[str, str]:
        return (a, b) if rng.random() < 0.5 else (b, a)

    def by(who: str, text: str) -> Line:
        return Line(text, by_user=who == a)

    t, o = teller()
    brother, city, other_city = draw(MEN), draw(CITIES), draw(CITIES)
    add(
        FACT,
        f"Which city did {t}'s brother relocate to?",
        fixed(city),
        (EARLY, by(t, f"My brother {brother} finally moved to {city}, he sends me photos of trams.")),
        distractor=by(o, f"My colleague's brother just moved to {other_city} for a job, he's terrified."),
    )
    t, o = teller()
    species, pet, other_species, other_pet = draw(SPECIES), draw(PET_NAMES), draw(SPECIES), draw(PET_NAMES)
    adopted = f"Guess what, we adopted {article(species)} from the rescue! She's called {pet}, she rules us."
    add(
        FACT,
        f"What animal does {t} keep as a pet now, and what is its name?",
        fixed(species, pet),
        (EARLY, by(t, adopted)),
        distractor=by(o, f"The kids next door just got {article(other_species)}, they named it {other_pet}."),
    )
    t, o = teller()
    instrument, other_instrument = draw(INSTRUMENTS), draw(INSTRUMENTS)
    add(
        FACT,
        f"Which musical instrument is {t} learning to play?",
        fixed(instrument),
        (ANYWHERE, by(t, f"I've signed up for {instrument} lessons, my teacher says I hold it all wrong.")),
        distractor=by(o, f"My nephew plays the {other_instrument} in the school orchestra, very loudly."),
    )
    t, o = teller()
    food, other_food, mother = draw(FOODS), draw(FOODS), draw(WOMEN)
    add(
        FACT,
        f"What does {t} have to avoid eating?",
        fixed(food),
        (ANYWHERE, by(t, f"Turns out I can't have {food} any more, the doctor thinks it's an intolerance.")),
        distractor=by(o, f"{mother}'s little boy refuses to touch {other_food}, even hidden in a sauce."),
    )
    # Two hops: the relation is told once, then only the name is used.
    t, o = teller()
    sister, job, other_job, friend = draw(WOMEN), draw(JOBS), draw(JOBS), draw(KIN)
    add(
        FACT,
        f"What does {t}'s sister do for a living?",
        fixed(job),
        (EARLY, by(t, f"My sister {sister} is coming to stay for a week, so I'm clearing the spare room.")),
        (MIDDLE, by(t, f"{sister} got the job she went for! She starts as {article(job)} on Monday.")),
        distractor=by(o, f"My friend {friend}'s sister is {article(other_job)}, she keeps strange hours."),
    )
    partnered, o = teller()
    partner, pastime, other_pastime = draw(KIN), draw(PASTIMES), draw(PASTIMES)
    add(
        FACT,
        f"What pastime has {partnered}'s partner taken up?",
        fixed(pastime),
        (EARLY, by(partnered, f"My partner {partner} made dinner last night, three courses, I fainted.")),
        (MIDDLE, by(partnered, f"{partner} has gone mad for {pastime}, every free Saturday goes on it.")),
        distractor=by(o, f"My partner tried {other_pastime} once and swore never again."),
    )
    t, o = teller()
    kid, other_kid = draw(WOMEN), draw(WOMEN)
    add(
        FACT,
        f"What is the name of {t}'s daughter?",
        fixed(kid),
        (ANYWHERE, by(t, f"Our little one, {kid}, turned five at the weekend and demanded a dinosaur cake.")),
        distractor=by(o, f"My cousin's daughter {other_kid} has just started school, she's so grown up."),
    )
    t, o = teller()
    company, new_company, other_company = draw(COMPANIES), draw(COMPANIES), draw(COMPANIES)
    add(
        UPDATED,
        f"Where does {t} work now?",
        fixed(new_company),
        (EARLY, by(t, f"Another week at {company}, the open-plan office is so loud I wear headphones.")),
        (MIDDLE, by(t, f"I handed in my notice at {company}! I've accepted an offer from {new_company}.")),
        distractor=by(o, f"My flatmate just started at {other_company} and already hates the commute."),
    )
    t, o = teller()
    home, new_home, parents_city = draw(CITIES), draw(CITIES), draw(CITIES)
    add(
        UPDATED,
        f"Which city is {t} living in at the moment?",
        fixed(new_home),
        (EARLY, by(t, f"Our flat in {home} is tiny, but I love the bakery downstairs.")),
        (MIDDLE, by(t, f"We've officially moved to {new_home}! There's a balcony, and boxes everywhere.")),
        distractor=by(o, f"My parents keep talking about retiring to {parents_city}."),
    )
    t, o = teller()
    car, new_car, other_car = draw(CARS), draw(CARS), draw(CARS)
    add(
        UPDATED,
        f"What car is {t} driving these days?",
        fixed(new_car),
        (EARLY, by(t, f"The old {car} failed its inspection again, the mechanic just laughed.")),
        (MIDDLE, by(t, f"Sold the {car} at last and bought {article(new_car)}, it still smells new.")),
        distractor=by(o, f"My colleague won't stop bragging about his {other_car}."),
    )
    t, o = (b, a) if partnered == a else (a, b)  # the one without a partner is dating
    first, then, host, other = draw(KIN), draw(KIN), draw(filler.SLOTS["person"]), draw(MEN)
    add(
        UPDATED,
        f"Who is {t} dating now?",
        fixed(then),
        (EARLY, by(t, f"I've been seeing someone, {first}, for a couple of months, it's going well.")),
        (MIDDLE, by(t, f"So {first} and I broke up, it was mutual. But I met {then} at {host}'s party!")),
        distractor=by(o, f"My flatmate is seeing a guy called {other}, they're sickeningly happy."),
    )
    events = rng.sample(EVENTS, 4)
    for event, question in events[:3]:
        t, _ = teller()
        phrase = rng.choice(RELATIVE)
        told = friends_event(rng, t == a, event, phrase)
        add(DATE, question.format(who=t), counted_back(phrase), (ANYWHERE, told))
    t, _ = teller()
    event, question = events[3]
    add(DATE, question.format(who=t), told_on, (ANYWHERE, by(t, f"I {event} this morning, still buzzing!")))
    t, o = teller()
    wedding_in = rng.randint(20, 70)

    def wedding(day: date, by_user: bool = t == a) -> Line:
        when = spelled(day + timedelta(days=wedding_in))
        return Line(f"My cousin's wedding is on {when}, up in the mountains, I've nothing to wear.", by_user)

    add(
        DATE,
        f"When is {t}'s cousin getting married?",
        ahead(wedding_in),
        (EARLY, wedding),
        distractor=by(o, "My brother's wedding is next summer and nothing is planned, nothing."),
    )
    return facts


ECHOES = [
    "Wait, {when}? I had no idea!",
    "So that was {when}, I'm putting it in my calendar so I never forget.",
    "{when}, wow, and you're only telling me now?",
    "Hold on, {when}? That's the day I was stuck at the airport!",
]


def friends_event(rng: random.Random, by_user: bool, event: str, phrase: str) -> Write:
    """An event told in relative time: the other friend writes out its date,
    or the teller does when the teller writes the response."""

    def write(day: date) -> Line:
        when = spelled(day - timedelta(days=days_back(phrase, day)))
        if by_user:
            return Line(f"I {event} {phrase}!", echo=rng.choice(ECHOES).format(when=when))
        return Line(f"I {event} {phrase}, {when}, a date to remember.", by_user=False)

    return write


def assistant_facts(draw: Draw) -> list[Fact]:
    """Facts of a user talking to an assistant, told in passing inside
    requests (clauses: lower case, no full stop), asked in the first person."""
    rng = draw.rng
    facts: list[Fact] = []

    def add(kind: str, question: str, answers: Answers, *told: Told, distractor: Line | None = None) -> None:
        facts.append(fact(kind, question, answers, *told, distractor=distractor))

    def passing(text: str, restated: str = "") -> Line:
        return Line(text, echo=restated if rng.random() < 0.5 else "")  # the assistant restates some

    kid, city, other_city = draw(WOMEN), draw(CITIES), draw(CITIES)
    studies = passing(
        f"my daughter {kid} just started at the conservatory in {city}",
        f"With {kid} just starting at the conservatory in {city}, keep the plan light.",
    )
    add(
        FACT,
        "Which city is my daughter studying music in?",
        fixed(city),
        (EARLY, studies),
        distractor=passing(f"my colleague's daughter has just gone off to university in {other_city}"),
    )
    diet, other_diet = draw(DIETS), draw(DIETS)
    eats = passing(
        f"I've been {diet} since the new year", f"Since you're {diet}, I've kept these suggestions in line."
    )
    add(
        FACT,
        "What kind of diet do I follow?",
        fixed(diet),
        (ANYWHERE, eats),
        distractor=passing(f"my flatmate has just gone {other_diet}, so the fridge is a battleground"),
    )
    species, pet, other_species, other_pet = draw(SPECIES), draw(PET_NAMES), draw(SPECIES), draw(PET_NAMES)
    add(
        FACT,
        "What pet do I have, and what is it called?",
        fixed(species, pet),
        (ANYWHERE, passing(f"our {species} {pet} has started waking us up at dawn")),
        distractor=passing(f"my neighbour's {other_species} {other_pet} got into our flat again"),
    )
    son, sport, other_sport = draw(MEN), draw(SPORTS), draw(SPORTS)
    trains = passing(
        f"my son {son} has {sport} training every Saturday morning",
        f"With {son}'s {sport} training on Saturday mornings, weekends start early for you.",
    )
    add(
        FACT,
        "Which sport does my boy do at weekends?",
        fixed(sport),
        (ANYWHERE, trains),
        distractor=passing(f"my nephew has just joined {article(other_sport)} club"),
    )
    language, other_language = draw(LANGUAGES), draw(LANGUAGES)
    learns = passing(
        f"I've started learning {language} for work",
        f"Learning {language} alongside everything else is a lot, so be patient with yourself.",
    )
    add(
        FACT,
        "Which foreign language am I studying?",
        fixed(language),
        (ANYWHERE, learns),
        distractor=passing(f"my partner already speaks fluent {other_language}"),
    )
    # The answer is the assistant's.
    trail = draw(TRAILS)
    recommended = Line(
        f"For a first multi-day trip I'd suggest the {trail}: the stages are manageable, the waymarking is "
        "clear and there are guesthouses along the way.",
        by_user=False,
        topic="hiking",
        request="I have a week off in late summer and I'd love to do a long-distance walk in Germany. "
        "Which route would you suggest for a first multi-day hike?",
    )
    add(FACT, "Which walking route did you recommend for my week off?", fixed(trail), (ANYWHERE, recommended))
    # Two hops: the relation is told once, then only the name is used.
    neighbour, job, other_job = draw(KIN), draw(JOBS), draw(JOBS)
    add(
        FACT,
        "What does my neighbour do for work?",
        fixed(job),
        (EARLY, passing(f"my neighbour {neighbour} has offered to water the plants while we're away")),
        (MIDDLE, passing(f"{neighbour} has just qualified as {article(job)}, there's a party next door")),
        distractor=passing(f"my cousin's neighbour works as {article(other_job)}"),
    )
    mentor, mentor_city, boss_city = draw(KIN), draw(CITIES), draw(CITIES)
    add(
        FACT,
        "Where is my mentor moving to?",
        fixed(mentor_city),
        (EARLY, passing(f"my mentor at work, {mentor}, thinks I should apply for the team lead role")),
        (MIDDLE, passing(f"{mentor} is relocating to {mentor_city} in the autumn, a loss for the team")),
        distractor=passing(f"my boss keeps saying he'll retire to {boss_city}"),
    )
    home, new_home, parents_city = draw(CITIES), draw(CITIES), draw(CITIES)
    moved = passing(
        f"now that we've moved to {new_home}, I have a much longer commute",
        f"Now that you're in {new_home}, the longer commute is worth planning around.",
    )
    add(
        UPDATED,
        "Which city do I live in now?",
        fixed(new_home),
        (EARLY, passing(f"we live right in the centre of {home}")),
        (MIDDLE, moved),
        distractor=passing(f"my parents still live in {parents_city}"),
    )
    company, new_company, other_company = draw(COMPANIES), draw(COMPANIES), draw(COMPANIES)
    joined = passing(
        f"I've just started a new job at {new_company} after four years at {company}",
        f"Congratulations on the move to {new_company}.",
    )
    add(
        UPDATED,
        "Who is my current employer?",
        fixed(new_company),
        (EARLY, passing(f"I work in the finance team at {company}")),
        (MIDDLE, joined),
        distractor=passing(f"my partner works at {other_company}"),
    )
    manager, new_manager, other_manager = draw(KIN), draw(KIN), draw(KIN)
    add(
        UPDATED,
        "Who do I report to now?",
        fixed(new_manager),
        (EARLY, passing(f"my manager, {manager}, wants the report by Friday")),
        (MIDDLE, passing(f"{manager} has left the company and my new manager is {new_manager}")),
        distractor=passing(f"my friend's manager {other_manager} sounds like a nightmare"),
    )
    budget, new_budget, other_budget = draw(BUDGETS), draw(BUDGETS), draw(BUDGETS)
    add(
        UPDATED,
        "How much money have I set aside for the kitchen renovation?",
        fixed(new_budget),
        (EARLY, passing(f"our budget for redoing the kitchen is {budget} euros")),
        (MIDDLE, passing(f"we've had to raise the kitchen budget to {new_budget} euros (the plumbing)")),
        distractor=passing(f"our neighbours spent {other_budget} euros on their bathroom"),
    )
    wedding_in = rng.randint(20, 70)

    def wedding(day: date) -> Line:
        return passing(f"my sister's wedding is on {spelled(day + timedelta(days=wedding_in))}")

    add(DATE, "When is my sister getting married?", ahead(wedding_in), (EARLY, wedding))
    events = rng.sample(EVENTS, 3)
    for event, question in events[:2]:
        phrase = rng.choice(RELATIVE)
        told = assistant_event(rng, event, phrase)
        add(DATE, question.format(who="I"), counted_back(phrase), (ANYWHERE, told))
    event, question = events[2]
    add(DATE, question.format(who="I"), told_on, (ANYWHERE, Line(f"I {event} this morning")))
    return facts


ASSISTANT_ECHOES = [
    "Counting back, that was {when}, so congratulations are still in order.",
    "That was {when}, which is worth noting down as a milestone.",
    "Well done, by the way; {when} is a day to remember.",
]


def assistant_event(rng: random.Random, event: str, phrase: str) -> Write:
    """An event told in relative time, whose date the assistant works out."""

    def write(day: date) -> Line:
        when = spelled(day - timedelta(days=days_back(phrase, day)))
        return Line(f"I {event} {phrase}", echo=rng.choice(ASSISTANT_ECHOES).format(when=when))

    return write


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
    user = draw(SPEAKERS)
    if friends:
        other = draw(SPEAKERS)
        facts = friends_facts(draw, user, other)
        calendar = session_calendar(
            rng, total, first=FIRST_DAY, start_within=25, sizes=(12, 30), gaps=(5, 24)
        )
    else:
        facts = assistant_facts(draw)
        calendar = session_calendar(rng, total, first=FIRST_DAY, start_within=25, sizes=(3, 12), gaps=(1, 9))
    days = [day for day, size in calendar for _ in range(size)]

    planted: dict[int, Line] = {}
    questions: list[Question] = []
    taken: set[int] = set()
    for item in facts:
        positions: list[int] = []
        for plant in item.plants:
            positions.append(place(rng, plant.window, total, taken, after=positions[-1] if positions else -1))
            planted[positions[-1]] = plant.write(days[positions[-1]])
        for plant in item.distractors:
            position = place(rng, plant.window, total, taken, after=-1)
            planted[position] = plant.write(days[position])
        questions.append(Question(item.question, item.answers([days[p] for p in positions]), item.kind))

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
    check(conversation)
    return conversation


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


def check(conversation: Conversation) -> None:
    """Every answer is in the conversation and none in its last fifth (nor
    in its question): full history can answer everything, a buffer nothing."""
    exchanges = conversation.exchanges
    everything = dated_text(exchanges)
    tail = dated_text(exchanges[len(exchanges) * 4 // 5 :])
    problems = []
    for q in conversation.questions:
        if not holds(q, everything):
            problems.append(f"{q.text} {q.answers}: not in the conversation")
        if holds(q, tail):
            problems.append(f"{q.text} {q.answers}: in the last fifth")
        if q.kind != DATE and set(q.answers) & words(q.text):
            problems.append(f"{q.text} {q.answers}: in the question")
        if q.kind not in KINDS:
            problems.append(f"{q.text}: unknown kind {q.kind}")
    if problems:
        raise AssertionError(f"{conversation.key}: " + "; ".join(problems))


def make_conversations(seed: int, count: int, exchanges: int) -> list[Conversation]:
    """``count`` conversations of ``exchanges`` exchanges each, all from ``seed``:
    odd-numbered ones two friends, even-numbered ones a user and an assistant."""
    return [make_conversation(seed, number, exchanges) for number in range(1, count + 1)]

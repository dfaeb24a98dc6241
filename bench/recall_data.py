"""Synthetic personal-assistant conversations with planted facts, for bench/memory_recall.py.

Each conversation is one user chatting with an assistant over months, in
sessions days or weeks apart. Facts about the user's life are planted early
(a sister's city, a dog's breed, an allergy, a password, appointments), some
are changed later (a new employer, a new car), and similar facts about other
people are mixed in as distractors. Everything else is chit-chat. At the end
each fact is asked about in other words; a question's answer words are the
lower-case content words a context must contain to answer it (for dates: the
day, the month's name and the year, as they are written or as the exchange's
date gives them).

Everything comes from a seeded ``random.Random``: the same seed and sizes give
the same text, dates and questions.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone
from typing import Generic, TypeVar

# Kinds of question, as the benchmark breaks its figures down.
FACT, UPDATED, DATE = "fact", "updated fact", "date"
KINDS = (FACT, UPDATED, DATE)

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


# --- value pools: each conversation draws its own, distractors draw others -----

NAMES = ["Dana", "Priya", "Tomas", "Aoife", "Marek", "Lucia", "Kwame", "Sanna", "Elif", "Rafael"]
RELATIVES = ["Ines", "Clara", "Nadia", "Freya", "Maren", "Yasmin", "Olga", "Bea", "Lotte", "Ruth"]
FRIENDS = ["Jonas", "Theo", "Malik", "Hugo", "Soren", "Arjun", "Felix", "Emre", "Callum", "Dario"]
CITIES = ["Porto", "Lyon", "Gdansk", "Valencia", "Bergen", "Tallinn", "Ghent", "Bologna", "Cork", "Leipzig"]
BREEDS = ["greyhound", "beagle", "dachshund", "labrador", "whippet", "spaniel", "collie", "poodle", "corgi"]
PET_NAMES = ["Biscuit", "Pickle", "Juniper", "Mochi", "Pepper", "Waffle", "Nutmeg", "Otis", "Bramble"]
ALLERGENS = ["cashews", "walnuts", "pistachios", "hazelnuts", "sesame", "shellfish", "pecans", "peanuts"]
BIRDS = ["heron", "finch", "osprey", "plover", "kestrel", "wren", "curlew", "starling", "swift"]
JOBS = ["radiographer", "paramedic", "pharmacist", "physiotherapist", "midwife", "dietitian", "audiologist"]
HOBBIES = ["pottery", "woodturning", "salsa", "watercolour", "calligraphy", "flamenco", "printmaking"]
COMPANIES = [
    "Brightwell",
    "Northgate",
    "Fernbrook",
    "Halcyon",
    "Quillon",
    "Marrowfield",
    "Tidewater",
    "Lumenta",
]
STREETS = ["Juniper", "Alder", "Rowan", "Hawthorn", "Linden", "Sycamore", "Chestnut", "Larch", "Hazel"]
CARS = ["Golf", "Yaris", "Octavia", "Fiesta", "Corolla", "Civic", "Clio", "Micra", "Ioniq", "Fabia"]
RESTAURANTS = ["Olivetta", "Marigold", "Tamarind", "Lanterna", "Figtree", "Saltbox", "Cardamom", "Alcove"]
DESTINATIONS = ["Reykjavik", "Lisbon", "Kyoto", "Naples", "Madeira", "Dubrovnik", "Tromso", "Sardinia"]
DOCTORS = ["Okafor", "Lindqvist", "Moreau", "Brennan", "Takeda", "Varga", "Castillo", "Novak"]
DISTANCES = ["35", "45", "55", "65", "75", "85"]  # above 31, so never mistaken for a day


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


# --- facts ---------------------------------------------------------------------

# Where in the conversation (as fractions of its length) facts are told,
# changed, and imitated. The last fifth is chit-chat only, so a buffer of
# recent exchanges cannot answer by luck.
# SETTLED follows EARLY: a detail about something told earlier.
EARLY, SETTLED, MIDDLE, ANYWHERE = (0.02, 0.35), (0.36, 0.48), (0.5, 0.78), (0.05, 0.75)

Write = Callable[[date], tuple[str, str]]  # exchange date -> (user_input, the reply's own sentence)
#: What a plant writes: ``Write``'s pair here, a ``Line`` in bench/recall_dialogue.py.
Said = TypeVar("Said")


@dataclass(frozen=True, slots=True)
class Plant(Generic[Said]):
    window: tuple[float, float]
    write: Callable[[date], Said]  # the exchange's date -> what it says


@dataclass(frozen=True, slots=True)
class Fact(Generic[Said]):
    kind: str
    plants: list[Plant[Said]]  # in conversation order; an update (or a second hop) after what it builds on
    question: str
    answers: Callable[[list[date]], tuple[str, ...]]  # from the plants' dates
    distractors: list[Plant[Said]]


def fixed(*answers: str) -> Callable[[list[date]], tuple[str, ...]]:
    return lambda _dates: tuple(a.lower() for a in answers)


def said(text: str) -> Write:
    return lambda _day: (text, "")


def make_facts(draw: Draw) -> list[Fact]:
    """The facts of one conversation, with the user's own values."""
    rng = draw.rng
    sister, city, other_city = draw(RELATIVES), draw(CITIES), draw(CITIES)
    friend, friend2, friend3 = draw(FRIENDS), draw(FRIENDS), draw(FRIENDS)
    breed, pet, other_breed, other_pet = draw(BREEDS), draw(PET_NAMES), draw(BREEDS), draw(PET_NAMES)
    allergen, other_allergen = draw(ALLERGENS), draw(ALLERGENS)
    password = f"{draw(BIRDS)}{rng.randint(10, 99)}"
    other_password = f"{draw(BIRDS)}{rng.randint(10, 99)}"
    partner, job, other_job = draw(FRIENDS), draw(JOBS), draw(JOBS)
    hobby, other_hobby = draw(HOBBIES), draw(HOBBIES)
    company, new_company, other_company = draw(COMPANIES), draw(COMPANIES), draw(COMPANIES)
    street, new_street = draw(STREETS), draw(STREETS)
    car, new_car, other_car = draw(CARS), draw(CARS), draw(CARS)
    distance, new_distance = draw(DISTANCES), draw(DISTANCES)
    restaurant, other_restaurant = draw(RESTAURANTS), draw(RESTAURANTS)
    destination, other_destination = draw(DESTINATIONS), draw(DESTINATIONS)
    doctor, other_doctor = draw(DOCTORS), draw(DOCTORS)
    dentist_in, flight_in = rng.randint(9, 40), rng.randint(20, 60)
    birthday = date(2023, rng.randint(1, 12), rng.randint(1, 28))

    def appointment(days: int, text: Callable[[date], str]) -> Write:
        return lambda day: (text(day + timedelta(days=days)), "")

    def in_days(days: int, *, year: bool = True) -> Callable[[list[date]], tuple[str, ...]]:
        return lambda dates: date_words(dates[0] + timedelta(days=days), year=year)

    def told_on(dates: list[date]) -> tuple[str, ...]:
        return date_words(dates[0])

    return [
        Fact(
            FACT,
            [
                Plant(
                    EARLY,
                    said(
                        f"My sister {sister} moved to {city} last spring and she finally found a flat near the river."
                    ),
                )
            ],
            "Which city does my sister live in now?",
            fixed(city),
            [Plant(ANYWHERE, said(f"{friend} told me his brother is moving to {other_city} for a new job."))],
        ),
        Fact(
            DATE,
            [
                Plant(
                    EARLY,
                    said(
                        f"Big news: we adopted {pet} from the rescue centre today! He slept on the sofa all evening."
                    ),
                )
            ],
            "When did our dog come home with us?",
            told_on,
            [],
        ),
        Fact(
            FACT,
            [
                Plant(
                    SETTLED,
                    said(
                        f"{pet} is such a typical {breed}: asleep all day, then sprinting round the garden at dusk."
                    ),
                )
            ],
            "What kind of dog do I have, and what is it called?",
            fixed(breed, pet),
            [
                Plant(
                    ANYWHERE,
                    said(
                        f"The neighbours' {other_breed}, {other_pet}, barked at the postman all morning again."
                    ),
                )
            ],
        ),
        Fact(
            FACT,
            [
                Plant(
                    EARLY,
                    said(
                        f"For any recipe ideas: I'm allergic to {allergen}, so please always leave them out."
                    ),
                )
            ],
            "Is there anything I must never eat?",
            fixed(allergen),
            [
                Plant(
                    ANYWHERE,
                    said(f"Cooking for {friend2} on Saturday, and he can't have {other_allergen} at all."),
                )
            ],
        ),
        Fact(
            FACT,
            [
                Plant(
                    EARLY,
                    said(
                        f"Writing this down before I lose it: the wifi password at the cabin is {password}."
                    ),
                )
            ],
            "What do I type to get online when we stay at the lake house?",
            fixed(password),
            [
                Plant(
                    ANYWHERE, said(f"The guest network at the office now uses the password {other_password}.")
                )
            ],
        ),
        Fact(
            FACT,
            [
                Plant(
                    EARLY,
                    said(f"{partner} got the position! He starts as a {job} at the hospital next week."),
                )
            ],
            "What does my partner do for a living?",
            fixed(job),
            [
                Plant(
                    ANYWHERE,
                    said(f"{friend3} is retraining to become a {other_job}, which surprised everyone."),
                )
            ],
        ),
        Fact(
            DATE,
            [
                Plant(
                    EARLY,
                    said(
                        f"Just got back from my very first {hobby} class. My hands are a mess but I loved it."
                    ),
                )
            ],
            "When did I begin going to my evening class?",
            told_on,
            [
                Plant(
                    ANYWHERE, said(f"{friend2} keeps asking me to join his {other_hobby} group on weekends.")
                )
            ],
        ),
        Fact(
            FACT,
            [
                Plant(
                    EARLY,
                    said(
                        f"Our anniversary dinner is always at {restaurant}, the little place by the station."
                    ),
                )
            ],
            "Where do we usually celebrate our anniversary?",
            fixed(restaurant),
            [
                Plant(
                    ANYWHERE,
                    said(f"{friend} recommended {other_restaurant} for a work lunch, have you heard of it?"),
                )
            ],
        ),
        Fact(
            FACT,
            [Plant(EARLY, said(f"My GP is Dr {doctor}; she wants to see me again about the knee."))],
            "What is the name of my family doctor?",
            fixed(doctor),
            [Plant(ANYWHERE, said(f"{partner}'s dentist, Dr {other_doctor}, is retiring soon."))],
        ),
        Fact(
            UPDATED,
            [
                Plant(
                    EARLY,
                    said(f"Another long week at {company}; being the only analyst on the team is tiring."),
                ),
                Plant(
                    MIDDLE,
                    said(
                        f"I accepted the offer from {new_company}! I hand in my notice at {company} tomorrow."
                    ),
                ),
            ],
            "Which firm am I employed by these days?",
            fixed(new_company),
            [Plant(ANYWHERE, said(f"{friend3} just joined {other_company} and already hates the commute."))],
        ),
        Fact(
            UPDATED,
            [
                Plant(EARLY, said(f"The flat on {street} Street is freezing again, the heating is ancient.")),
                Plant(
                    MIDDLE,
                    said(f"We got the keys to the new place on {new_street} Road, moving boxes everywhere."),
                ),
            ],
            "What road is our home on now?",
            fixed(new_street),
            [],
        ),
        Fact(
            UPDATED,
            [
                Plant(EARLY, said(f"My old {car} made a grinding noise on the motorway this morning.")),
                Plant(
                    MIDDLE, said(f"Sold the {car} at last and picked up a second-hand {new_car} yesterday.")
                ),
            ],
            "What car am I driving at the moment?",
            fixed(new_car),
            [
                Plant(
                    ANYWHERE, said(f"{friend} wants to sell me his {other_car}, but it has rust everywhere.")
                )
            ],
        ),
        Fact(
            UPDATED,
            [
                Plant(EARLY, said(f"I've set myself a running target of {distance} km a week until summer.")),
                Plant(
                    MIDDLE,
                    said(f"The knee feels fine, so I'm raising my weekly running goal to {new_distance} km."),
                ),
            ],
            "How far do I aim to jog every week?",
            fixed(new_distance),
            [],
        ),
        Fact(
            DATE,
            [
                Plant(
                    EARLY,
                    appointment(
                        dentist_in,
                        lambda d: f"I finally booked the dentist for {d.day} {d:%B}, at nine in the morning.",
                    ),
                )
            ],
            "When did I say I'd visit the dentist?",
            in_days(dentist_in),
            [],
        ),
        Fact(
            DATE,
            [
                Plant(
                    EARLY,
                    appointment(
                        flight_in,
                        lambda d: f"Flights are booked: we fly to {destination} on {d.day} {d:%B} {d.year}!",
                    ),
                )
            ],
            "On which day does our holiday flight leave?",
            in_days(flight_in),
            [
                Plant(
                    ANYWHERE,
                    said(f"{friend2} is off to {other_destination} soon, he won't stop talking about it."),
                )
            ],
        ),
        Fact(
            DATE,
            [
                Plant(
                    EARLY,
                    said(
                        f"Note to self: Mum's birthday is on {birthday.day} {birthday:%B}, don't forget the card this time."
                    ),
                )
            ],
            "When is my mother's birthday?",
            fixed(*date_words(birthday, year=False)),
            [],
        ),
    ]


# --- chit-chat -------------------------------------------------------------------
# No month names, no day numbers, no "may": filler never answers a date question.

FILLER: dict[str, tuple[list[str], list[str]]] = {
    "work": (
        [
            "Work was hectic today, three meetings back to back and no lunch.",
            "How do I tell my manager the deadline is not realistic without sounding negative?",
            "Any tips for running a shorter weekly meeting? Ours drags on forever.",
            "I keep getting interrupted when I try to focus. How do people manage deep work?",
            "Should I write a one-page summary before the planning session or just talk it through?",
        ],
        [
            "Blocking a fixed focus window in your calendar tends to work better than hoping for quiet time.",
            "It helps to frame the concern as a trade-off: what could be delivered by the date, and what would need more time.",
            "A written agenda shared the evening before keeps a meeting short, because people arrive prepared.",
            "Try ending each meeting with a list of decisions and owners, so nothing needs repeating next week.",
            "Interruptions are easier to refuse when the team agrees on quiet hours together.",
            "A short summary up front usually saves time, since everyone starts from the same page.",
            "If the workload keeps growing, it could be worth listing everything you carry and asking what to drop.",
        ],
    ),
    "cooking": (
        [
            "What can I cook tonight with leftover rice, two eggs and some spinach?",
            "I want to bake bread at home. Is sourdough too hard for a beginner?",
            "Give me an idea for a quick lunch I can take to work.",
            "The soup I made was bland. How do I fix that next time?",
            "What's a good vegetarian dish for guests who love spicy food?",
        ],
        [
            "A quick fried rice works well: fry the rice hot, push it aside, scramble the eggs, then fold in the spinach.",
            "Sourdough takes patience rather than skill; a simple yeasted loaf is a gentler first project.",
            "Acid and salt fix most bland soups, so a squeeze of lemon at the end makes a big difference.",
            "Roasted vegetables with chickpeas and a yoghurt dressing travel well and keep for a few days.",
            "A chana masala or a spicy bean chilli pleases most guests and can be made the day before.",
            "Toasting spices in oil before adding liquid gives a much deeper flavour.",
            "Batch cooking on Sunday saves a surprising amount of time during the week.",
        ],
    ),
    "weather": (
        [
            "It has rained all day and I feel completely unmotivated.",
            "Lovely sunshine this afternoon, I sat outside with a coffee for an hour.",
            "The wind kept me awake most of the night.",
            "Grey skies again. Any ideas for cheering up a dull evening?",
        ],
        [
            "Rainy days are a good excuse for something slow and cosy, like a film or a long bath.",
            "Getting outside for even twenty minutes of daylight can lift your mood noticeably.",
            "A warm drink, a blanket and an audiobook can turn a grey evening into a pleasant one.",
            "If the noise keeps you up, earplugs or a fan for steady sound can help you sleep through it.",
            "Sunny breaks are worth grabbing, because they rarely last long at this time of year.",
        ],
    ),
    "reading": (
        [
            "I finished that detective novel, the ending was a bit of a letdown.",
            "Can you suggest a light book for the train?",
            "I never find time to read anymore. Any tricks?",
            "Our book club argued for two hours about a single chapter.",
        ],
        [
            "Short story collections are ideal for commutes, since each piece fits a single journey.",
            "Reading ten pages before bed builds a habit without feeling like a chore.",
            "Endings that rush to tie everything up often disappoint after a strong build-up.",
            "A lively argument usually means the book did something interesting, even if nobody agreed.",
            "Keeping a book in your bag means every queue becomes a chance to read.",
        ],
    ),
    "fitness": (
        [
            "My legs are sore after yesterday's workout. Should I rest or keep moving?",
            "What's a good stretching routine after a run?",
            "I skipped the gym all week and feel guilty about it.",
            "How do I stay motivated to exercise when it's dark outside?",
        ],
        [
            "Gentle movement such as walking or easy cycling usually helps soreness more than complete rest.",
            "Hold each stretch for about thirty seconds and focus on calves, hamstrings and hips.",
            "A missed week is not a failure; starting again with a lighter session is the best response.",
            "Laying out your kit the night before removes one excuse when the alarm goes off.",
            "Exercising with a friend makes it much harder to skip a session.",
        ],
    ),
    "home": (
        [
            "The kitchen tap is dripping again. Can I fix it myself?",
            "I want to tidy the spare room but I don't know where to start.",
            "Any ideas for making a small living room feel bigger?",
            "The plants on the windowsill look sad. What am I doing wrong?",
        ],
        [
            "A dripping tap is often just a worn washer, which is cheap and easy to replace once the water is off.",
            "Start with one shelf or one box rather than the whole room, so progress is visible quickly.",
            "Mirrors, light colours and furniture with visible legs all make a small room feel more open.",
            "Most struggling houseplants are overwatered; let the soil dry out between waterings.",
            "Sorting things into keep, donate and recycle piles stops you from moving clutter around.",
        ],
    ),
    "plans": (
        [
            "I'm thinking about learning a language this year. Which one would be useful?",
            "Should I take a weekend off and go somewhere quiet?",
            "How do I plan a surprise party without the guest of honour finding out?",
            "I want to save more money. Where should I begin?",
        ],
        [
            "The most useful language is usually the one you will actually practise, so pick one tied to people or places you care about.",
            "A quiet weekend away can reset you more than a long trip, especially with your phone switched off.",
            "Use a separate group chat for the party and give everyone one cover story to stick to.",
            "Tracking spending for a few weeks shows where the money goes before you set a budget.",
            "Automatic transfers to savings on payday make saving happen without willpower.",
        ],
    ),
    "tech": (
        [
            "My laptop has become really slow. What should I check first?",
            "Is it worth paying for a password manager?",
            "My phone battery dies by the evening. Any fixes?",
            "How do I back up my photos properly?",
        ],
        [
            "Check which programs start automatically and how full the disk is; both slow a laptop down.",
            "A password manager is worth it, because it lets every account have a strong, unique password.",
            "Lowering screen brightness and limiting background refresh usually buys several hours of battery.",
            "Keep at least two copies of your photos, one of them somewhere other than your home.",
            "Installing updates promptly fixes both security holes and many performance problems.",
        ],
    ),
}

OPENERS = [
    "{name}, that sounds like a lot.",
    "Good question, {name}.",
    "Thanks for sharing that, {name}.",
    "I hear you, {name}.",
    "Happy to help, {name}.",
    "{name}, here is what I would suggest.",
    "That makes sense, {name}.",
]
ACKNOWLEDGEMENTS = [
    "Thanks for telling me, {name}; I'll keep it in mind.",
    "Noted, {name}.",
    "That's good to know, {name}.",
    "Got it, {name}, I'll remember that.",
    "Oh, {name}, thanks for letting me know.",
]
SMALL_TALK = [
    "How are you feeling about it overall?",
    "Let me know if you want to talk it through in more detail.",
    "It sounds like things are moving along, even if it feels busy.",
    "Small steps like that tend to add up over the weeks.",
    "I'm glad you mentioned it, because it helps me give better suggestions later.",
    "If anything changes, just tell me and we can adjust the plan.",
    "Is there anything you'd like help with next?",
    "Take it one thing at a time and it will feel much more manageable.",
]

MIN_WORDS, MAX_WORDS = 30, 120


def assistant_reply(rng: random.Random, name: str, opener: str, body: list[str]) -> str:
    """A reply of 30 to 120 words: an opener naming the user, the given
    sentences, then small talk until it is long enough."""
    sentences = [opener.format(name=name)] + body
    target = rng.randint(MIN_WORDS + 5, MAX_WORDS - 30)
    extra = rng.sample(SMALL_TALK, len(SMALL_TALK))
    while sum(len(s.split()) for s in sentences) < target and extra:
        sentences.append(extra.pop())
    text = " ".join(sentences)
    return " ".join(text.split()[:MAX_WORDS])


def filler_exchange(rng: random.Random, name: str) -> tuple[str, str]:
    questions, answers = FILLER[rng.choice(sorted(FILLER))]
    body = rng.sample(answers, rng.randint(2, 4))
    return rng.choice(questions), assistant_reply(rng, name, rng.choice(OPENERS), body)


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


def make_conversation(seed: int, number: int, total: int) -> Conversation:
    rng = random.Random(f"{seed}/{number}/{total}")
    draw = Draw(rng)
    name = draw(NAMES)
    calendar = session_calendar(rng, total)
    days = [day for day, size in calendar for _ in range(size)]

    planted: dict[int, Write] = {}
    questions: list[Question] = []
    taken: set[int] = set()
    for fact in make_facts(draw):
        positions: list[int] = []
        for plant in fact.plants:
            positions.append(place(rng, plant.window, total, taken, after=positions[-1] if positions else -1))
            planted[positions[-1]] = plant.write
        for plant in fact.distractors:
            planted[place(rng, plant.window, total, taken, after=-1)] = plant.write
        questions.append(Question(fact.question, fact.answers([days[p] for p in positions]), fact.kind))

    texts: list[tuple[str, str]] = []
    for position, day in enumerate(days):
        if position in planted:
            user_input, sentence = planted[position](day)
            body = [sentence] if sentence else []
            texts.append((user_input, assistant_reply(rng, name, rng.choice(ACKNOWLEDGEMENTS), body)))
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

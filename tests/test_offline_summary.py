"""Offline summaries: whole sentences quoted from every part of the range they cover.

Sessions are written through the write service with the after-commit work
run as in production (summarization runs eagerly in tests), so the rows
checked are the ones the offline backend writes for a real session.
"""

from __future__ import annotations

import re

import pytest

from sessions_app.tokens import count_tokens
from summaries.extractive import REPLY_LEAD, USER_LEAD, extractive_summary, parse_summary
from summaries.inference.offline import OFFLINE_CHAT_REPLY
from summaries.models import Summary
from summaries.sentences import sentences, tidy
from tests.factories import ChatSessionFactory, EpisodeFactory, SummaryFactory

pytestmark = pytest.mark.django_db

# The reply the offline backend wrote before it showed memory; old sessions hold it.
EARLIER_OFFLINE_REPLY = (
    "[offline] No chat model is configured (INFERENCE_BACKEND=offline), so this reply "
    "was not written by a model. Set INFERENCE_BACKEND and INFERENCE_SERVICE_URL to chat."
)
PEOPLE = [
    "Abigail", "Bartholomew", "Cordelia", "Desmond", "Evangeline", "Fitzgerald", "Gwendolyn", "Horatio",
    "Isadora", "Jeremiah", "Katarina", "Leopold", "Marguerite", "Nathaniel", "Ottoline", "Percival",
    "Rosalind", "Sebastian", "Theodora", "Ulysses", "Valentina", "Wilhelmina", "Xavier", "Yolanda",
    "Zachariah", "Annabelle", "Benedict", "Clementine", "Dorian", "Eleanor", "Frederick", "Genevieve",
    "Humphrey", "Imogen", "Jasper", "Lavinia", "Montgomery", "Octavia", "Peregrine", "Seraphina",
]  # fmt: skip
CITIES = [
    "Oslo", "Lisbon", "Kyoto", "Nairobi", "Quito", "Tallinn", "Hobart", "Porto", "Dakar", "Bergen",
    "Cusco", "Ghent", "Lhasa", "Malmo", "Perth", "Split", "Tromso", "Utrecht", "Vilnius", "Zagreb",
]  # fmt: skip
# Several sentences per message, some without an ending or with a doubled
# one, some too short to say anything, and a question the user keeps asking.
MESSAGES = [
    "my friend {name} moved to {city} last year and teaches music there",
    "Did you know {name} has lived in {city} since the spring? Is that near the school?.",
    "Thanks! {name} finally settled in {city} after a long search for a flat!!",
    "Quick one. {name} now rents a small house in {city} close to the harbour... What do you think?",
]


@pytest.fixture
def forty(owner, django_capture_on_commit_callbacks):
    """A 40-exchange offline chat, each write's after-commit work run as in production."""

    def write():
        session = ChatSessionFactory(owner=owner)
        episodes = []
        for n in range(40):
            text = MESSAGES[n % len(MESSAGES)].format(name=PEOPLE[n], city=CITIES[n % len(CITIES)])
            with django_capture_on_commit_callbacks(execute=True):
                episodes.append(EpisodeFactory(session=session, user_input=text, response=OFFLINE_CHAT_REPLY))
        return session, episodes

    return write


def summary_text(session) -> str:
    return "\n".join(Summary.objects.chain(session.pk).values_list("content", flat=True))


@pytest.mark.parametrize("by_meaning", [False, True], ids=["by-words", "by-encoder"])
def test_a_40_exchange_offline_summary_mentions_its_beginning_middle_and_end(forty, settings, by_meaning):
    if by_meaning:
        settings.CONTEXT_SEMANTIC_CANDIDATES = 5000  # the sentence encoder scores the sentences
    session, episodes = forty()

    rows = list(Summary.objects.chain(session.pk))
    assert rows, "the session was summarized"
    assert (rows[0].first_episode_id, rows[-1].last_episode_id) == (episodes[0].pk, episodes[-1].pk)
    text = summary_text(session)
    named = [n for n, name in enumerate(PEOPLE) if name in text]
    # Facts of each part of the range, not the first few topics.
    assert [n for n in named if n < 10], named
    assert [n for n in named if 15 <= n < 25], named
    assert [n for n in named if n >= 35], named
    assert len(named) >= 20, named
    for row in rows:
        assert row.token_count <= settings.SUMMARY_GEN_MAX_TOKENS


def test_offline_summaries_quote_whole_sentences_once_without_boilerplate(forty):
    session, episodes = forty()
    text = summary_text(session)
    written = {s for ep in episodes for s in sentences(ep.user_input)}
    quoted = parse_summary(text)
    assert quoted.user and not quoted.other and not quoted.replies
    for sentence in quoted.user:
        assert sentence in written  # a whole sentence the user wrote, as written
    assert len(quoted.user) == len({s.casefold() for s in quoted.user})
    assert "[offline]" not in text and "No chat model" not in text and "remembers" not in text
    assert not re.search(r"[.!?…][.!?]", text), text  # "school?." and "flat!!" end once
    assert "Thanks!" not in text and "Quick one." not in text  # too short to say anything


def test_earlier_offline_replies_and_a_digest_quoting_them_are_left_out(owner, django_capture_on_commit_callbacks):
    """Sessions written before: replies in the earlier wording, and a row
    whose digest quoted them (cut mid-sentence) updated by the new summary."""
    session = ChatSessionFactory(owner=owner)
    with django_capture_on_commit_callbacks(execute=True):
        first = EpisodeFactory(
            session=session, user_input="My bike is a green Dutch omafiets.", response=EARLIER_OFFLINE_REPLY
        )
    SummaryFactory(
        session=session,
        content=(
            "Topics discussed: My bike is a green Dutch omafiets.\nKey points: [offline] No chat model is "
            "configured (INFERENCE_BACKEND=offline), so this reply was not written by . [offline] No chat"
        ),
        first_episode_id=first.pk,
        last_episode_id=first.pk,
    )
    for n in range(6):
        with django_capture_on_commit_callbacks(execute=True):
            EpisodeFactory(
                session=session,
                user_input=f"The bike needs a new chain number {n} before the long ride to Haarlem.",
                response=EARLIER_OFFLINE_REPLY if n % 2 else OFFLINE_CHAT_REPLY,
            )
    text = summary_text(session)
    assert "long ride to Haarlem" in text
    assert "[offline]" not in text and "written by" not in text and "INFERENCE" not in text
    assert "Topics discussed: My bike is a green Dutch omafiets." in text  # the earlier row's own words stay


def test_replies_written_by_a_model_are_quoted_beside_the_users_messages(settings):
    exchanges = [
        ("Which train goes to Sintra? We leave from Rossio.", "The Sintra line leaves Rossio every 20 minutes. "
         "Buy a Viva Viagem card first. The ride takes forty minutes."),
        ("Is the Pena Palace worth it with kids?", "Yes, children love the colourful terraces. Book a slot."),
    ]  # fmt: skip
    text = extractive_summary(exchanges, max_tokens=settings.SUMMARY_GEN_MAX_TOKENS)
    user, replies = text.splitlines()
    assert user.startswith(USER_LEAD) and replies.startswith(REPLY_LEAD)
    assert "Which train goes to Sintra?" in user and "Is the Pena Palace worth it with kids?" in user
    # One central sentence of each reply, whole.
    assert len(sentences(replies.removeprefix(REPLY_LEAD))) == 2
    assert "Sintra line" in replies or "Viva Viagem" in replies or "forty minutes" in replies


def test_a_pass_too_large_for_the_cap_quotes_every_part_of_it():
    exchanges = [(f"{PEOPLE[n]} keeps bees in {CITIES[n % len(CITIES)]} and sells the honey.", "") for n in range(40)]
    text = extractive_summary(exchanges, max_tokens=120)
    assert count_tokens(text) <= 120
    named = [n for n, name in enumerate(PEOPLE) if name in text]
    assert len(named) >= 5
    assert named[0] < 8 and named[-1] >= 32  # first and last parts, not only the first ones
    gaps = [b - a for a, b in zip(named, named[1:], strict=False)]
    assert max(gaps) <= 10  # and the parts between


def test_an_update_past_the_cap_keeps_the_earlier_part_and_adds_the_new():
    previous = USER_LEAD + " ".join(f"{PEOPLE[n]} plays the cello on Tuesdays." for n in range(30))
    new = [(f"{name} learned to sail on the lake this summer.", "") for name in ("Imogen", "Jasper", "Lavinia")]
    cap = count_tokens(previous) - 20
    text = extractive_summary(new, previous=previous, max_tokens=cap)
    assert count_tokens(text) <= cap
    kept = [n for n in range(30) if f"{PEOPLE[n]} plays" in text]
    assert kept[0] == 0 and kept[-1] == 29  # the first and the last of what was summarized stay
    assert 15 <= len(kept) < 30  # thinned evenly, not cut from one end
    # The new exchanges get their share of the cap (3 of 33 exchanges), from each part.
    learned = [name for name in ("Imogen", "Jasper", "Lavinia") if f"{name} learned to sail" in text]
    assert learned[0] == "Imogen" and len(learned) >= 2, learned
    assert text.index("Xavier plays") < text.index("Imogen learned")  # in order


def test_an_update_whose_new_exchanges_fill_the_cap_keeps_the_previous_summary_in_it():
    previous = "Nadia keeps a rescue greyhound called Pilot. She walks him by the canal at dawn."
    new = [(f"{PEOPLE[n]} sings tenor in the choir at the old church.", "") for n in range(40)]
    text = extractive_summary(new, previous=previous, max_tokens=200)
    assert count_tokens(text) <= 200
    assert text.startswith(previous + "\n" + USER_LEAD)
    named = [n for n, name in enumerate(PEOPLE) if f"{name} sings" in text]
    assert named[0] < 8 and named[-1] >= 32  # the new part, from its first part to its last


def test_sentences_are_tidied_not_rewritten():
    assert sentences("Is that near the school?. yes it is!!\n- a list item\nEnds with a colon:") == [
        "Is that near the school?",
        "yes it is!",
        "a list item.",
        "Ends with a colon.",
    ]
    assert tidy('He said "go home." ') == 'He said "go home."'
    assert tidy("  ...  ") == ""


def test_nothing_to_quote_keeps_the_previous_summary():
    assert extractive_summary([("ok", "")], previous="Ana likes tea.", max_tokens=100) == "Ana likes tea."
    assert extractive_summary([("ok", "")], max_tokens=100)  # never empty

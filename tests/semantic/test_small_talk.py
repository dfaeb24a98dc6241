"""Small talk is told by the message itself (``sessions_app.semantic.small_talk``):
short real questions and requests are never taken for it, whatever their
words; thanks, agreement and goodbyes said in words the detector's phrases
do not hold still are."""

from __future__ import annotations

import pytest

from sessions_app.semantic.encoder import encoder
from sessions_app.semantic.small_talk import asks, is_small_talk

# Short, vague, and all needing memory: the answer is in the session.
SHORT_QUESTIONS = [
    "and the deadline?",
    "which port did we pick?",
    "what was my dog's name?",
    "and the other one?",
    "how tall am I?",
    "when's the launch?",
    "what was the error again?",
    "who's the client?",
    "my allergy?",
    "the cat's vet?",
    "how are the numbers?",
    "what did we say?",
    "which one was it?",
    "is it still on?",
    "ok so which host?",
    "thanks, and the total?",
]
# Without a question mark, and needing memory all the same.
SHORT_REQUESTS = [
    "remind me of the port",
    "tell me the deadline again",
    "same settings as last time",
    "the address I gave you",
    "continue with the migration",
    "what's my sister called",
]
SMALL_TALK = ["cheers!", "sounds fine", "thank you kindly", "no problem at all", "I see", "hiya", "see ya"]


def verdict(message: str) -> bool:
    return is_small_talk(message, encoder().encode([message])[0])


@pytest.mark.parametrize("message", SHORT_QUESTIONS + SHORT_REQUESTS)
def test_short_real_questions_are_never_small_talk(message):
    assert not verdict(message)


@pytest.mark.parametrize("message", SMALL_TALK)
def test_small_talk_in_other_words_is_small_talk(message):
    assert verdict(message)


@pytest.mark.parametrize(
    ("message", "asking"),
    [
        ("which port?", True),
        ("What's my dog called", True),
        ("  how are you", True),
        ("Is it done", True),
        ("appreciate it!", False),
        ("fair enough", False),
        ("whatever works", False),
        ("", False),
    ],
)
def test_a_message_asks_by_its_question_mark_or_opening_word(message, asking):
    assert asks(message) is asking


def test_a_message_that_asks_needs_to_come_closer(monkeypatch):
    """The same closeness passes a statement and not a question."""
    from sessions_app.semantic import small_talk

    message = "great stuff"
    vector = encoder().encode([message])[0]
    closest = float((small_talk._phrases() @ vector).max())
    monkeypatch.setattr(small_talk, "STATEMENT_SIMILARITY", closest - 0.01)
    monkeypatch.setattr(small_talk, "SIMILARITY", closest + 0.01)
    assert small_talk.is_small_talk(message, vector)
    assert not small_talk.is_small_talk(message + "?", vector)

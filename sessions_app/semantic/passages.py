"""What of an episode gets a vector: the whole exchange, and its passages.

One vector for a whole exchange blurs it: a friend's reply that covers the
weekend, a new job and a sister's move, or an answer of 300 words with one
sentence about the user in it, sits between all its topics and near none of
them. So each side of the exchange is also cut into passages of a few
sentences, and a passage close to a question lifts its episode
(``neighbours.SessionVectors.similarity``). A passage never spans both
sides: who said it is part of what it means.

Measured by bench/retrieval_rankings.py on both probe sets (``--set
synthetic`` and ``--set dialogue``); the figures are in bench/README.md.
"""

from __future__ import annotations

import re

#: A passage packs whole sentences up to this many words; a longer sentence is a passage alone.
PASSAGE_WORDS = 20
#: Vectors per episode at most, the whole exchange included: bounds the
#: encoder's work and what a question compares for a very long episode
#: (its later passages go unencoded; the whole exchange still stands for them).
MAX_VECTORS = 8
#: The encoder reads at most 256 word pieces; cutting the text first keeps a
#: 100,000-character message from costing more than a short one to tokenize.
TEXT_CHARACTERS = 2000

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def episode_text(user_input: str, response: str) -> str:
    """The whole exchange, as the encoder reads it."""
    return f"{user_input[:TEXT_CHARACTERS]}\n{response[:TEXT_CHARACTERS]}"


def passages(text: str) -> list[str]:
    """``text`` cut into runs of whole sentences of at most ``PASSAGE_WORDS`` words."""
    found: list[str] = []
    run: list[str] = []
    words = 0
    for sentence in _SENTENCE_END.split(text[: TEXT_CHARACTERS * 2]):
        sentence = sentence.strip()
        if not sentence:
            continue
        length = len(sentence.split())
        if run and words + length > PASSAGE_WORDS:
            found.append(" ".join(run))
            run, words = [], 0
        run.append(sentence)
        words += length
    if run:
        found.append(" ".join(run))
    return [p[:TEXT_CHARACTERS] for p in found]


def episode_texts(user_input: str, response: str) -> list[str]:
    """The texts an episode is encoded as: the whole exchange first, then
    the passages of what the user said and of the response, at most
    ``MAX_VECTORS`` in all. A side that is one passage already is not
    repeated when it is the whole exchange (an empty other side)."""
    whole = episode_text(user_input, response)
    texts = [whole]
    for part in [*passages(user_input), *passages(response)]:
        if part != whole.strip() and part not in texts:
            texts.append(part)
    return texts[:MAX_VECTORS]


def passage_spans(text: str) -> list[tuple[int, int]]:
    """The ``[start, end)`` offsets of ``text``'s passages, packed as
    ``passages`` packs them but over the whole text: within its first
    ``TEXT_CHARACTERS * 2`` characters, ``joined`` of each span is the text
    its vector was made from."""
    found: list[tuple[int, int]] = []
    run: tuple[int, int] | None = None
    words = 0
    position = 0
    for separator in [*_SENTENCE_END.finditer(text), None]:
        end = separator.start() if separator else len(text)
        sentence = text[position:end]
        begin = position + len(sentence) - len(sentence.lstrip())
        stop = position + len(sentence.rstrip())
        position = separator.end() if separator else len(text)
        if stop <= begin:
            continue
        length = len(text[begin:stop].split())
        if run and words + length > PASSAGE_WORDS:
            found.append(run)
            run, words = None, 0
        run = (run[0], stop) if run else (begin, stop)
        words += length
    if run:
        found.append(run)
    return found


def joined(span: str) -> str:
    """A passage's text as ``passages`` gives it to the encoder."""
    return " ".join(s.strip() for s in _SENTENCE_END.split(span) if s.strip())[:TEXT_CHARACTERS]

"""What of an episode gets a vector: the whole exchange, and its passages.

One vector for a whole exchange blurs it: a friend's reply that covers the
weekend, a new job and a sister's move, or an answer of 300 words with one
sentence about the user in it, sits between all its topics and near none of
them. So each side of the exchange is also cut into passages of a few
sentences, and a passage close to a question lifts its episode
(``neighbours.closeness``). A passage never spans both sides: who said it
is part of what it means.

The passages are the ones the context quotes (``passage_spans``, which
``sessions_app.excerpts`` cuts by), over the whole of both sides, the
user's first, up to ``SEMANTIC_PASSAGE_TOKENS_PER_EPISODE`` tokens: a fact
at the end of a long reply has a vector of its own, and each vector is
stored with its passage's ``[start, end)`` in ``user_input + response``
(``vectors.spans_to_bytes``), so a ranker can tell which quotable passage
it stands for.

Measured by bench/retrieval_rankings.py on both probe sets (``--set
synthetic`` and ``--set dialogue``); the figures are in bench/README.md.
What it costs, in bytes and encoder time: bench/passage_vectors.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.conf import settings

from sessions_app.tokens import count_tokens

#: A passage packs whole sentences up to this many words; a longer sentence is a passage alone.
PASSAGE_WORDS = 20
#: The whole exchange's vector reads this much of each side (the encoder
#: reads 256 word pieces at most anyway), and a passage's text is cut here.
TEXT_CHARACTERS = 2000

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


@dataclass(frozen=True, slots=True)
class Encoding:
    """What an episode is encoded as: ``texts`` (the whole exchange first,
    then its passages) and, for each passage, its ``[start, end)`` in
    ``user_input + response``."""

    texts: list[str]
    spans: list[tuple[int, int]]


def episode_text(user_input: str, response: str) -> str:
    """The whole exchange, as the encoder reads it."""
    return f"{user_input[:TEXT_CHARACTERS]}\n{response[:TEXT_CHARACTERS]}"


def episode_encoding(user_input: str, response: str, *, tokens: int | None = None) -> Encoding:
    """The whole exchange, then the passages of what the user said and of
    the response, in order, while their tokens fit in ``tokens``
    (``SEMANTIC_PASSAGE_TOKENS_PER_EPISODE`` when None): what does not fit
    ends that side's passages. A passage that repeats one already taken,
    or that is the whole exchange (the other side empty), gets no vector
    of its own."""
    room = settings.SEMANTIC_PASSAGE_TOKENS_PER_EPISODE if tokens is None else tokens
    whole = episode_text(user_input, response)
    texts, spans = [whole], []
    seen = {whole.strip()}
    for offset, side in ((0, user_input), (len(user_input), response)):
        for start, end in passage_spans(side):
            cost = count_tokens(side[start:end])
            if cost > room:
                break
            room -= cost
            text = joined(side[start:end])
            if text in seen:
                continue
            seen.add(text)
            texts.append(text)
            spans.append((start + offset, end + offset))
    return Encoding(texts, spans)


def episode_texts(user_input: str, response: str) -> list[str]:
    """The texts an episode is encoded as (``episode_encoding``'s)."""
    return episode_encoding(user_input, response).texts


def passages(text: str) -> list[str]:
    """``text`` cut into runs of whole sentences of at most ``PASSAGE_WORDS`` words."""
    return [joined(text[start:end]) for start, end in passage_spans(text)]


def passage_spans(text: str) -> list[tuple[int, int]]:
    """The ``[start, end)`` offsets of ``text``'s passages: runs of whole
    sentences (or lines) of at most ``PASSAGE_WORDS`` words, a longer
    sentence alone. ``joined`` of each span is the text its vector is made from."""
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
    """A passage's text as the encoder reads it: its sentences joined by single spaces."""
    return " ".join(s.strip() for s in _SENTENCE_END.split(span) if s.strip())[:TEXT_CHARACTERS]


#: Rows written before passages covered the whole text held at most this many vectors.
OLDER_MAX_VECTORS = 8


def older_layout(user_input: str, response: str) -> list[str]:
    """The texts of a row written before passages covered the whole text
    (no spans stored): the whole exchange, then the passages of the first
    ``2 * TEXT_CHARACTERS`` characters of each side, ``OLDER_MAX_VECTORS``
    in all. Read until the sweep encodes the row again."""
    whole = episode_text(user_input, response)
    texts = [whole]
    for side in (user_input, response):
        for part in passages(side[: TEXT_CHARACTERS * 2]):
            if part != whole.strip() and part not in texts:
                texts.append(part)
    return texts[:OLDER_MAX_VECTORS]

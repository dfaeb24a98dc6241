"""Whole sentences of a text, tidied for quoting, and the words they are compared by.

Quoted text is what people wrote, so nothing is rewritten: a sentence keeps
its words and only its ending is made single (``school?.`` becomes
``school?``; a sentence without one gets a full stop), list markers and
spacing are dropped. The offline backend's summaries and the memory shown
with an offline reply quote through here.
"""

from __future__ import annotations

import re

from sessions_app.search.stopwords import STOP_WORDS

__all__ = ["CLOSE", "closeness_terms", "sentences", "tidy", "word_count"]

_CLOSERS = "\"'”’)]"
#: One sentence's end: a mark, then any closing quotes or brackets.
CLOSE = re.compile(rf"[.!?…]+([{re.escape(_CLOSERS)}]*)$")
# A break after a sentence's end (before or after a closing quote);
# fixed-width lookbehinds, as Python's ``re`` needs.
_BREAK = re.compile(rf"(?<=[.!?…])\s+|(?<=[.!?…][{re.escape(_CLOSERS)}])\s+")
# Markdown's list and heading marks at the start of a line.
_LINE_MARK = re.compile(r"^\s*(?:[-*•>#]+|\d+[.)])\s+")
# Punctuation that would double up with the full stop a sentence is given.
_TRAILING = re.compile(r"[\s,;:–—-]+$")
_WORD = re.compile(r"\w+")
_ENDINGS = ("ing", "ed", "es", "s")


def sentences(text: str) -> list[str]:
    """``text``'s sentences in order, each tidied; lines of code fences are skipped."""
    found: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        line = _LINE_MARK.sub("", line)
        for piece in _BREAK.split(line):
            sentence = tidy(piece)
            if sentence:
                found.append(sentence)
    return found


def tidy(piece: str) -> str:
    """One sentence with single spaces and one ending ("" when it holds no word)."""
    sentence = " ".join(piece.split())
    if not _WORD.search(sentence):
        return ""
    end = CLOSE.search(sentence)
    if end:
        # Keep the first mark only: "school?." and "really?!" end once.
        return sentence[: end.start()] + sentence[end.start()] + end.group(1)
    return _TRAILING.sub("", sentence) + "."


def word_count(sentence: str) -> int:
    return len(_WORD.findall(sentence))


def closeness_terms(text: str) -> list[str]:
    """The words two texts are compared by: lower-cased, without stop words,
    without the commonest English endings ("cats" and "cat" are one word)."""
    return [_stem(w) for w in _WORD.findall(text.lower()) if w not in STOP_WORDS and len(w) > 1]


def _stem(word: str) -> str:
    """``moving``, ``moved``, ``moves`` and ``move`` all become ``mov``."""
    for ending in _ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            word = word[: -len(ending)]
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word

"""Plain-text excerpts of found episodes, with where the matched words are.

The database marks the matching words itself (PostgreSQL's ``ts_headline``
with the index's configuration, SQLite FTS5's ``highlight()`` with its
tokenizer), so what is marked is what the index matched, stemming included.
The markers are characters that occur in none of the texts at hand, so
text that holds markup, control characters or query syntax can never be
taken for a marker; they are stripped, and their places become the
``[start, end)`` offsets of the highlights. Nothing is escaped or added:
the snippet is the episode's own text (cut, with "…" where it is cut), to
be shown as text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from sessions_app.models import Episode
from sessions_app.search.database import episode_backend

__all__ = ["SNIPPET_CHARS", "Snippet", "clip", "marker_pair", "parse_marked", "snippets_for"]

#: Characters of episode text in a snippet (plus "…" at a cut end).
SNIPPET_CHARS = 200
#: Characters kept before the first match, so it is read in its sentence.
LEAD_CHARS = 60
ELLIPSIS = "…"
WHITESPACE = re.compile(r"\s")


@dataclass(frozen=True, slots=True)
class Snippet:
    text: str
    #: ``[start, end)`` character offsets of the matched words within ``text``.
    highlights: tuple[tuple[int, int], ...]


def marker_pair(texts: Sequence[str]) -> tuple[str, str]:
    """Two characters found in none of ``texts``: control characters first, then private-use ones."""
    for start, stop in _candidate_pairs():
        if not any(start in text or stop in text for text in texts):
            return start, stop
    raise ValueError("No marker characters are free in these texts.")  # pragma: no cover


def _candidate_pairs() -> Iterator[tuple[str, str]]:
    yield "\x02", "\x03"
    yield "\x1e", "\x1f"
    # 6400 private-use code points: 100 texts cannot hold them all.
    for code in range(0xE000, 0xF8FF, 2):
        yield chr(code), chr(code + 1)


def parse_marked(marked: str, start: str, stop: str) -> tuple[str, list[tuple[int, int]]]:
    """The text without its markers, and the offsets of what they enclosed."""
    plain: list[str] = []
    spans: list[tuple[int, int]] = []
    length = 0
    pattern = re.compile(re.escape(start) + "(.*?)" + re.escape(stop), re.DOTALL)
    position = 0
    for found in pattern.finditer(marked):
        before = marked[position : found.start()]
        plain.append(before)
        length += len(before)
        word = found.group(1)
        if word:
            plain.append(word)
            spans.append((length, length + len(word)))
            length += len(word)
        position = found.end()
    plain.append(marked[position:])
    text = "".join(plain)
    # A marker left unpaired (never expected) must not reach the caller.
    return text.replace(start, "").replace(stop, ""), spans


def clip(
    text: str, spans: list[tuple[int, int]], *, size: int = SNIPPET_CHARS, lead: int = LEAD_CHARS
) -> Snippet:
    """At most ``size`` characters of ``text`` around its first span, cut at spaces where it can be."""
    if len(text) <= size:
        return Snippet(text, tuple(spans))
    first = spans[0][0] if spans else 0
    begin = max(0, first - lead)
    if begin > 0:
        space = WHITESPACE.search(text, begin, first)
        begin = space.end() if space else begin
    end = min(len(text), begin + size)
    if end < len(text):
        # Back to the last space, unless that would cut off the first match.
        floor = spans[0][1] if spans else begin + 1
        cut = max((m.start() for m in WHITESPACE.finditer(text, floor, end)), default=None)
        end = cut if cut is not None and cut > begin else end
    prefix = ELLIPSIS if begin > 0 else ""
    suffix = ELLIPSIS if end < len(text) else ""
    shift = len(prefix) - begin
    kept = tuple((s + shift, min(e, end) + shift) for s, e in spans if begin <= s < end)
    return Snippet(prefix + text[begin:end] + suffix, kept)


def snippets_for(episodes: Sequence[Episode], terms: list[str]) -> dict[int, Snippet]:
    """Episode id -> an excerpt of its user input, or of its response when only that matches.

    One query for all of them. ``terms`` are the terms as the index holds them.
    """
    if not episodes:
        return {}
    start, stop = marker_pair([text for ep in episodes for text in (ep.user_input, ep.response)])
    marked = (
        episode_backend().marked([ep.pk for ep in episodes], terms, start=start, stop=stop) if terms else {}
    )
    snippets = {}
    for ep in episodes:
        user_input, response = marked.get(ep.pk, (ep.user_input, ep.response))
        parsed = [parse_marked(user_input, start, stop), parse_marked(response, start, stop)]
        text, spans = next((part for part in parsed if part[1]), parsed[0] if parsed[0][0] else parsed[1])
        snippets[ep.pk] = clip(text, spans)
    return snippets

"""The prompt's layout (question, summaries, retrieved exchanges, recent details)
and how its pieces are written: Q/A pairs, dates, date spans."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sessions_app.labels import day, episode_label, lent_episode_label

QUESTION_LABEL = "User Question: "
SUMMARY_HEADER = "Conversation Summary (earlier context):"
RETRIEVED_HEADER = "Relevant earlier exchanges:"
RECENT_HEADER = "Recent conversation details:"
PREVIOUS_HEADER = "Previous conversation:"
#: A shared session's exchanges of the person's other chats, when its own
#: history is short enough for the seed's layout (``summaries.context.lent``).
OTHERS_HEADER = "From your other chats:"
INSTRUCTIONS = (
    "Instructions: Provide a comprehensive, helpful response to the user's question. "
    "Use the conversation above for context and stay consistent with what was already said; "
    "if the earlier context does not cover something, say so rather than guess."
)
SECTION_SEPARATOR = "\n\n"
#: Marks where a quoted exchange leaves text out.
ELLIPSIS = "…"


@dataclass(frozen=True, slots=True)
class Exchange:
    id: int
    user_input: str
    response: str
    position: int  # its number in the session (``Episode.position``)


def date_span(first: datetime | None, last: datetime | None) -> str:
    """``[8 May 2023 – 12 June 2023]``, ``[8 May 2023]`` for one day, "" when unknown."""
    if first is None or last is None:
        return ""
    start, end = day(first), day(last)
    return f"[{start}]" if start == end else f"[{start} – {end}]"


def format_pairs(exchanges: Sequence[Exchange]) -> str:
    """The numbered pairs, oldest first: ``Q1: ...\\nA1: ...``."""
    return SECTION_SEPARATOR.join(
        f"Q{n}: {ex.user_input}\nA{n}: {ex.response}" for n, ex in enumerate(exchanges, 1)
    )


def _label(exchange: Exchange, created_at: datetime, title: str | None) -> str:
    """The exchange's label; with ``title`` (another chat's), that chat's name in it."""
    if title is None:
        return episode_label(created_at=created_at, position=exchange.position)
    return lent_episode_label(created_at=created_at, title=title, position=exchange.position)


def format_retrieved(exchange: Exchange, created_at: datetime, title: str | None = None) -> str:
    """One retrieved exchange, quoted in full under its label: ``[8 May 2023 · #12] Q: ...``
    (``[8 May 2023 · "Trip planning" #12]`` for one of another chat, ``title``)."""
    label = _label(exchange, created_at, title)
    return f"{label} Q: {exchange.user_input}\nA: {exchange.response}"


def format_quoted(
    exchange: Exchange, created_at: datetime, spans: Sequence[tuple[int, int]], title: str | None = None
) -> str:
    """A long retrieved exchange by its passages ``spans`` (offsets into
    ``user_input + response``, in order), under its label, with ``…`` where
    text is left out: ``[8 May 2023 · #12] Q: … the passage … A: …``."""
    label = _label(exchange, created_at, title)
    cut = cut_exchange(exchange, spans)
    return f"{label} Q: {cut.user_input}\nA: {cut.response}"


def cut_exchange(exchange: Exchange, spans: Sequence[tuple[int, int]]) -> Exchange:
    """``exchange`` with each side cut to ``spans`` (offsets into
    ``user_input + response``, in order), ``…`` where text is left out."""
    split = len(exchange.user_input)
    user = [(s, e) for s, e in spans if e <= split]
    response = [(s - split, e - split) for s, e in spans if s >= split]
    return Exchange(
        exchange.id, _cut(exchange.user_input, user), _cut(exchange.response, response), exchange.position
    )


def _cut(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """``text`` by ``spans``, ``…`` for each run of text left out."""
    if not spans:
        return ELLIPSIS if text.strip() else text
    parts = [text[s:e] for s, e in spans]
    opening = f"{ELLIPSIS} " if text[: spans[0][0]].strip() else ""
    closing = f" {ELLIPSIS}" if text[spans[-1][1] :].strip() else ""
    return opening + f" {ELLIPSIS} ".join(parts) + closing


def render_prompt(
    *,
    question: str,
    recent: Sequence[Exchange],
    earlier: Sequence[str],
    retrieved: Sequence[str] = (),
    has_earlier_episodes: bool,
) -> str:
    """The layout. ``earlier`` are the texts standing in for older episodes
    (summary rows, then the digest), ``retrieved`` the older exchanges quoted
    for the question; an empty list leaves its section out, but a session
    longer than the recent window keeps the "Recent conversation details"
    heading. In the seed's layout, ``retrieved`` can only be exchanges of
    the person's other chats (a shared session's), under their own heading."""
    sections = [f"{QUESTION_LABEL}{question}"]
    if has_earlier_episodes:
        if earlier:
            sections.append(SUMMARY_HEADER + "\n" + SECTION_SEPARATOR.join(earlier))
        if retrieved:
            sections.append(RETRIEVED_HEADER + "\n" + SECTION_SEPARATOR.join(retrieved))
        if recent:
            sections.append(RECENT_HEADER + "\n" + format_pairs(recent))
    else:
        if retrieved:
            sections.append(OTHERS_HEADER + "\n" + SECTION_SEPARATOR.join(retrieved))
        if recent:
            sections.append(PREVIOUS_HEADER + "\n" + format_pairs(recent))
    sections.append(INSTRUCTIONS)
    return SECTION_SEPARATOR.join(sections)

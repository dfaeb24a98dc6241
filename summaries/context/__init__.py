"""The context for the next reply: a hierarchical layout (recent exchanges
in full, older ones summarized), plus the earlier exchanges that matter to
the question.

The prompt::

    User Question: {question}

    What the user has asked you to keep in mind: {notes within CONTEXT_NOTES_SHARE: notes.context}

    Conversation Summary (earlier context):
    [8 May 2023 – 12 June 2023] {summary rows, oldest first, then the digest of uncovered episodes}

    Relevant earlier exchanges:
    [8 May 2023 · #12] Q: ...
    A: ...

    Recent conversation details:
    Q1: ...
    A1: ...

    Instructions: ...

and, with ``CONTEXT_RECENT_EPISODES`` (8) exchanges or fewer, "Previous
conversation:" followed by the pairs instead of the middle sections.

Summary rows stand in for the episodes they cover; older episodes that no
row covers yet (summarization runs behind the writes) get the
extractive digest, so no exchange silently vanishes. Summaries keep the
gist but forget details, so the older episodes that rank highest for the
question (``sessions_app.retrieval``) are quoted as well: in full when
they are short, by their passages that matter for the question when they
are long (``summaries.context.selection``).

The budget (``CONTEXT_DEFAULT_BUDGET`` when the caller names none) is a hard
cap (see ``summaries.context.budget``), and not a target. After the recent
window's share (``summaries.context.window``) it goes, in this order, to
the best passages across the ranked exchanges (as many exchanges ranked as
the budget could hold, with some to spare: ``sources.retrieval_depth``),
each quoted only when its evidence for the question clears
``CONTEXT_RELEVANCE_FLOOR`` (``sessions_app.relevance``); then to the
digest. A summary row that answers the question is offered among the best
passages, by its passages that do (``summaries.context.summary_ranking``);
one that does not is left out, unless retrieval quoted nothing, when the
rows come before the digest, newest first. A message that needs no memory
(``sessions_app.semantic.small_talk``) gets neither passages nor summaries.
Retrieval comes first because it is what keeps old facts: on the recall
benchmark, the ranked exchanges keep far more of what a question asks
about than summaries of the same size.

Cost does not grow with the session: the recent episodes, the summary chain
(at most ``CONTEXT_MAX_SUMMARIES`` rows) and the digest's few uncovered episodes
are one query of index probes; retrieval is bounded by ``CONTEXT_RETRIEVE_CANDIDATES``;
the ranked episodes that may clear the floor are read with their marked words in
two queries, with the vectors retrieval read (``summaries.context.retrieved``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings

from sessions_app.models import ChatSession
from sessions_app.question_dates import date_lift
from sessions_app.retrieval import begin_ranking
from sessions_app.search import Hit
from sessions_app.tokens import count_tokens
from summaries.context import lent, sources
from summaries.context.budget import HEADING_COST, ContextTooLarge, Piece, fit, turn_budget
from summaries.context.layout import (
    INSTRUCTIONS,
    QUESTION_LABEL,
    SECTION_SEPARATOR,
    Exchange,
    date_span,
    format_pairs,
    render_prompt,
)
from summaries.context.notes_section import notes_first
from summaries.context.retrieved import Chosen, needs_no_memory, retrieved_pieces
from summaries.context.summary_ranking import compete
from summaries.context.whole import full_history_tokens, whole_history_instead
from summaries.context.window import split_window, window_may_not_hold
from summaries.digest import extractive_digest

__all__ = [
    "INSTRUCTIONS",
    "QUESTION_LABEL",
    "ContextResult",
    "ContextTooLarge",
    "build_context",
    "format_pairs",
    "full_history_tokens",
    "render_prompt",
    "turn_budget",
]

# What a retrieved exchange's label (date and position) and Q/A add to its episode's tokens.
RETRIEVED_LABEL_TOKENS = count_tokens("[18 May 2023 · #1234] Q: \nA: " + SECTION_SEPARATOR)


@dataclass(slots=True)
class ContextResult:
    """The assembled prompt and what went into it.

    ``summaries``, ``retrieved``, ``recent`` and ``digest`` hold the ids of
    the summary rows, the retrieved episodes, the recent episodes quoted
    (in full, but for a newest one cut to ``passages``) and the episodes
    quoted by the digest; ``positions`` maps each of
    those episodes' ids to its position in the session (the ``#12`` people
    read). ``omitted`` lists what was
    left out: ``{"summaries": [ids], "digest": [episode ids], "retrieved":
    [episode ids], "below_floor": [episode ids], "recent": [episode ids],
    "summaries_before_episode": id | None}``: ``retrieved`` the ranked
    exchanges that clear ``CONTEXT_RELEVANCE_FLOOR`` and did not fit,
    ``below_floor`` those ranked that do not clear it (never quoted); the last is set
    when the chain is longer than ``CONTEXT_MAX_SUMMARIES`` and means that
    the rows covering episodes before that id were not even read.
    ``full_history_tokens`` is what the prompt would cost with every episode
    in full; ``budget`` is the budget applied. ``retrieved_by_rank`` holds
    the ids of ``retrieved`` best first.
    """

    prompt: str
    token_count: int
    full_history_tokens: int
    budget: int
    summaries: list[int] = field(default_factory=list)
    retrieved: list[int] = field(default_factory=list)
    recent: list[int] = field(default_factory=list)
    digest: list[int] = field(default_factory=list)
    retrieved_by_rank: list[int] = field(default_factory=list)
    notes: list[int] = field(default_factory=list)  # the notes about the person it carries
    # The whole history, in the seed's layout, cost no more than the context (summaries.context.whole).
    whole: bool = False
    # The question needs no memory (small talk): nothing earlier was offered, so the summaries
    # and the digest in ``omitted`` were left out for that, not for the budget.
    needs_no_memory: bool = False
    positions: dict[int, int] = field(default_factory=dict)
    # Exchanges quoted in part (retrieved ones, and the newest when it alone is over the
    # window's share): episode id -> [[start, end], ...] into user_input + response.
    passages: dict[int, list[list[int]]] = field(default_factory=dict)
    # Retrieved exchanges of the person's other shared chats -> their session's uuid.
    other_sessions: dict[int, str] = field(default_factory=dict)
    # Summary rows of those chats quoted (by their passages that answer) -> their session's uuid.
    other_summaries: dict[int, str] = field(default_factory=dict)
    omitted: dict[str, Any] = field(
        default_factory=lambda: {
            "summaries": [],
            "digest": [],
            "retrieved": [],
            "below_floor": [],
            "recent": [],
            "summaries_before_episode": None,
            "notes": [],
        }
    )

    @property
    def within_budget(self) -> bool:
        return self.token_count <= self.budget

    def as_dict(self) -> dict[str, Any]:
        return {
            "prompt": self.prompt,
            "token_count": self.token_count,
            "full_history_tokens": self.full_history_tokens,
            "summaries": list(self.summaries),
            "retrieved": list(self.retrieved),
            "recent": list(self.recent),
            "digest": list(self.digest),
            "notes": list(self.notes),
            "positions": {str(pk): position for pk, position in self.positions.items()},
            "passages": {str(pk): [list(span) for span in spans] for pk, spans in self.passages.items()},
            "other_sessions": {str(pk): uuid for pk, uuid in self.other_sessions.items()},
            "other_summaries": {str(pk): uuid for pk, uuid in self.other_summaries.items()},
            "omitted": {key: list(v) if isinstance(v, list) else v for key, v in self.omitted.items()},
            "needs_no_memory": self.needs_no_memory,
            "budget": self.budget,
            "within_budget": self.within_budget,
        }


def build_context(
    *, session: ChatSession, question: str, budget: int | None = None, asked_at: datetime | None = None
) -> ContextResult:
    """Assemble the prompt for the next reply to ``question`` in ``session``
    within ``budget`` tokens (``CONTEXT_DEFAULT_BUDGET`` when None).
    ``asked_at`` (aware; now when None) is when the question is asked: the
    dates it names ("last week") are resolved against it and lift the
    exchanges written then (``sessions_app.question_dates``).

    ``ContextTooLarge`` when the question and the fixed text alone exceed
    the budget: no prompt over budget is ever built. The notes come first (``notes_section``).
    """
    budget = settings.CONTEXT_DEFAULT_BUDGET if budget is None else budget
    assemble = lambda room: _assemble(session, question, room, asked_at)  # noqa: E731
    return notes_first(assemble, session=session, question=question, budget=budget)


def _assemble(session: ChatSession, question: str, budget: int, asked_at: datetime | None) -> ContextResult:
    """The context without the notes, within ``budget``."""
    window = settings.CONTEXT_RECENT_EPISODES
    max_summaries = settings.CONTEXT_MAX_SUMMARIES
    # Retrieval begins first, when the counters say the session is longer
    # than the window or its share of the budget: the question is encoded
    # while the window is read.
    pending = None
    depth = sources.retrieval_depth(session, budget, RETRIEVED_LABEL_TOKENS)
    if session.cached_episode_count > 1 and (
        session.cached_episode_count > window
        or window_may_not_hold(total_tokens=session.cached_total_tokens, budget=budget)
    ):
        pending = begin_ranking(session=session, question=question, limit=depth)
    # With a window of 0 every episode is "older"; with a short session the
    # window holds everything and nothing older is read. One summary row more
    # than used tells whether older rows exist beyond the cap (the oldest: the
    # uncovered episodes start after the newest row either way).
    parts = sources.recent_window(session.pk, window, max_summaries + 1)
    chain, uncovered = parts.chain, parts.uncovered
    # The window's share of the budget; its older exchanges that do not fit
    # are left to retrieval (summaries.context.window).
    split = split_window(parts.recent, parts.tokens, budget)
    recent = split.kept
    not_read: sources.SummaryPart | None = None
    hits: list[Hit] = []
    if len(chain) > max_summaries:
        not_read, chain = chain[0], chain[1:]
    # Older episodes exist only behind a full window (the counters may run ahead of the rows).
    if pending and (len(parts.recent) >= window or split.left):
        hits = pending.hits([ex.id for ex in recent], lift=date_lift(session.pk, question, asked_at))
    has_earlier = bool(chain or uncovered or not_read or hits or split.left)

    chain_order = {part.id: n for n, part in enumerate(chain)}

    def render(kept: Sequence[Piece], shown: Sequence[Exchange]) -> str:
        kinds = ("summary", "digest", "retrieved", lent.LENT_SUMMARY)
        by_kind = {kind: [p for p in kept if p.kind == kind] for kind in kinds}
        # Summary rows oldest first, the digest after them; retrieved exchanges oldest first.
        earlier = sorted(by_kind["summary"], key=lambda p: chain_order[p.id]) + by_kind["digest"]
        # Other chats' summary rows after the exchanges.
        retrieved = sorted(by_kind["retrieved"], key=lambda p: p.id or 0) + by_kind[lent.LENT_SUMMARY]
        return render_prompt(
            question=question,
            recent=shown,
            earlier=[p.text for p in earlier],
            retrieved=[p.text for p in retrieved],
            has_earlier_episodes=has_earlier,
        )

    # The best passages across the ranked exchanges, in what the question and
    # the recent window leave of the budget (summaries.context.selection).
    room = budget - count_tokens(render([], recent)) - HEADING_COST["retrieved"]
    no_memory = pending is not None and needs_no_memory(question, pending)
    borrowed, lent_row_sessions, ranked = None, {}, hits
    if no_memory:
        # Thanks, greetings, goodbyes: nothing earlier is quoted, no summary
        # either; what was ranked is under the floor (sessions_app.semantic.small_talk).
        quoted_texts, chosen = [], Chosen(below_floor=[hit.episode_id for hit in hits])
        pieces: list[Piece] = []
    else:
        # A shared session's: the person's other chats' exchanges rank with its own (summaries.context.lent).
        borrowed = lent.borrow(session=session, question=question, pending=pending, depth=depth)
        ranked = lent.merged(hits, borrowed)
        quoted_texts, chosen = retrieved_pieces(
            session.pk, ranked, pending, room, RETRIEVED_LABEL_TOKENS, borrowed, recent
        )
        pieces = quoted_texts + _pieces(session.pk, chain, uncovered)
        # Summary rows that answer the question compete with the retrieved passages.
        vector = pending.vector.result() if pending is not None and pending.vector is not None else None
        pieces = compete(pieces, chain, question, vector)
        # Other chats' rows that answer it are offered after the best exchange, as this chat's are.
        lent_rows, lent_row_sessions = lent.lent_summaries(borrowed, question)
        pieces = pieces[:1] + lent_rows + pieces[1:]
    fitted = fit(budget=budget, recent=recent, pieces=pieces, render=render)
    kept_ids = {(p.kind, p.id) for p in fitted.kept}
    digest_ids = [ex.id for ex in uncovered]
    digest_kept = ("digest", None) in kept_ids
    retrieved_ids = sorted(p.id for p in fitted.kept if p.kind == "retrieved" and p.id is not None)
    quoted = [chosen.texts[pk][0] for pk in retrieved_ids] + fitted.recent
    quoted += uncovered if digest_kept else []
    full = full_history_tokens(session=session, question=question)
    # A context of every exchange already is the whole history.
    whole = None
    # The whole history is this session's alone: not instead of what other chats lent.
    lent_kept = {pk: uuid for pk, uuid in chosen.lent.items() if pk in retrieved_ids}
    lent_rows_kept = {pk: u for pk, u in lent_row_sessions.items() if (lent.LENT_SUMMARY, pk) in kept_ids}
    if has_earlier and not lent_kept and not lent_rows_kept:
        whole = whole_history_instead(session=session, question=question, than=fitted.token_count, estimate=full)
    if whole is not None:
        return ContextResult(
            prompt=whole.prompt,
            token_count=whole.token_count,
            full_history_tokens=whole.token_count,
            budget=budget,
            recent=[ex.id for ex in whole.exchanges],
            positions={ex.id: ex.position for ex in whole.exchanges},
            whole=True,
        )
    return ContextResult(
        prompt=fitted.prompt,
        token_count=fitted.token_count,
        full_history_tokens=full,
        budget=budget,
        summaries=[part.id for part in chain if ("summary", part.id) in kept_ids],
        retrieved=retrieved_ids,
        recent=[ex.id for ex in fitted.recent],
        digest=digest_ids if digest_kept else [],
        retrieved_by_rank=[hit.episode_id for hit in ranked if ("retrieved", hit.episode_id) in kept_ids],
        needs_no_memory=no_memory,
        positions={ex.id: ex.position for ex in quoted},
        other_sessions=lent_kept,
        other_summaries=lent_rows_kept,
        # The newest exchange's too, when it alone was over the window's share (summaries.context.window).
        passages={pk: chosen.spans[pk] for pk in retrieved_ids if pk in chosen.spans}
        | {ex.id: split.passages[ex.id] for ex in fitted.recent if ex.id in split.passages},
        omitted={
            "summaries": ([not_read.id] if not_read else [])
            + [part.id for part in chain if ("summary", part.id) not in kept_ids],
            "digest": [] if digest_kept else digest_ids,
            # Ranked, clearing the floor, and over budget; then ranked and under the floor.
            "retrieved": [pk for pk in chosen.above_floor if pk not in retrieved_ids],
            "below_floor": chosen.below_floor,
            # The window's older exchanges its share of the budget left to retrieval, not quoted.
            "recent": [ex.id for ex in split.left if ex.id not in retrieved_ids],
            # Rows older than ``not_read`` were not read at all; this bounds them.
            "summaries_before_episode": not_read.last_episode_id + 1 if not_read else None,
        },
    )


def _pieces(session_pk: int, chain: list[sources.SummaryPart], uncovered: list[Exchange]) -> list[Piece]:
    """The summary rows, newest first, then the digest: what the budget
    takes after the retrieved exchanges."""
    dates = sources.episode_dates(
        session_pk, [part.first_episode_id for part in chain] + [part.last_episode_id for part in chain]
    )
    summaries = []
    for part in reversed(chain):  # newest first
        span = date_span(dates.get(part.first_episode_id), dates.get(part.last_episode_id))
        text = f"{span} {part.content}" if span else part.content
        summaries.append(Piece("summary", part.id, text, part.token_count + count_tokens(span) + 1))
    digest_text = extractive_digest((ex.user_input, ex.response) for ex in uncovered)
    digest = [Piece("digest", None, digest_text, count_tokens(digest_text))] if digest_text else []
    return summaries + digest

"""The context for the next reply (seed 002's hierarchical layout).

The prompt keeps seed 002's shape::

    User Question: {question}

    Conversation Summary (earlier context):
    {summary rows, oldest first, then the digest of uncovered episodes}

    Recent conversation details:
    Q1: ...
    A1: ...

    Instructions: ...

and, with ``CONTEXT_RECENT_EPISODES`` (8) exchanges or fewer, "Previous
conversation:" followed by the pairs instead of the two middle sections.

Where seed 002 squeezes every older exchange into its extractive digest,
summary rows stand in for the episodes they cover. Older episodes that no row
covers yet (summarization runs behind the writes) still get the seed's digest,
so no exchange silently vanishes from the context.

Cost does not grow with the session: the recent episodes are one index probe
(``ORDER BY id DESC LIMIT 8``), the summary chain one query for at most
``CONTEXT_MAX_SUMMARIES`` rows (newest first; a chain longer than that is
reported as left out, it is not read), and the digest reads only the few
uncovered episodes it actually quotes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from sessions_app.models import ChatSession, Episode
from sessions_app.tokens import count_tokens
from summaries.digest import extractive_digest
from summaries.models import Summary

QUESTION_LABEL = "User Question: "
SUMMARY_HEADER = "Conversation Summary (earlier context):"
RECENT_HEADER = "Recent conversation details:"
PREVIOUS_HEADER = "Previous conversation:"
INSTRUCTIONS = (
    "Instructions: Provide a comprehensive, helpful response to the user's question. "
    "Use the conversation above for context and stay consistent with what was already said; "
    "if the earlier context does not cover something, say so rather than guess."
)
SECTION_SEPARATOR = "\n\n"

# extractive_digest quotes at most five questions and three answers, always
# the first ones it is given, so it never needs more than five episodes.
DIGEST_EPISODES = 5


@dataclass(frozen=True, slots=True)
class Exchange:
    id: int
    user_input: str
    response: str


@dataclass(frozen=True, slots=True)
class SummaryPart:
    id: int
    content: str
    first_episode_id: int
    last_episode_id: int


@dataclass(slots=True)
class ContextResult:
    """The assembled prompt and what went into it.

    ``summaries``, ``recent`` and ``digest`` hold the ids of the summary rows,
    the episodes quoted in full and the episodes quoted by the digest.
    ``omitted`` lists what was left out: ``{"summaries": [ids], "digest":
    [episode ids], "summaries_before_episode": id | None}``; the last is set
    when the chain is longer than ``CONTEXT_MAX_SUMMARIES`` and means that the
    rows covering episodes before that id were not even read.
    ``full_history_tokens`` is what the prompt would cost with every episode
    in full.
    """

    prompt: str
    token_count: int
    full_history_tokens: int
    summaries: list[int] = field(default_factory=list)
    recent: list[int] = field(default_factory=list)
    digest: list[int] = field(default_factory=list)
    omitted: dict[str, Any] = field(
        default_factory=lambda: {"summaries": [], "digest": [], "summaries_before_episode": None}
    )
    budget: int | None = None

    @property
    def within_budget(self) -> bool:
        return self.budget is None or self.token_count <= self.budget

    def as_dict(self) -> dict[str, Any]:
        return {
            "prompt": self.prompt,
            "token_count": self.token_count,
            "full_history_tokens": self.full_history_tokens,
            "summaries": list(self.summaries),
            "recent": list(self.recent),
            "digest": list(self.digest),
            "omitted": {key: list(v) if isinstance(v, list) else v for key, v in self.omitted.items()},
            "budget": self.budget,
            "within_budget": self.within_budget,
        }


def format_pairs(exchanges: Sequence[Exchange]) -> str:
    """Seed 002's numbered pairs, oldest first: ``Q1: ...\\nA1: ...``."""
    return SECTION_SEPARATOR.join(
        f"Q{n}: {ex.user_input}\nA{n}: {ex.response}" for n, ex in enumerate(exchanges, 1)
    )


def render_prompt(
    *,
    question: str,
    recent: Sequence[Exchange],
    earlier: Sequence[str],
    has_earlier_episodes: bool,
) -> str:
    """The seed-002 layout. ``earlier`` are the texts standing in for older
    episodes (summary rows, then the digest); an empty list leaves the summary
    section out, but a session longer than the recent window keeps the
    "Recent conversation details" heading."""
    sections = [f"{QUESTION_LABEL}{question}"]
    if has_earlier_episodes:
        if earlier:
            sections.append(SUMMARY_HEADER + "\n" + SECTION_SEPARATOR.join(earlier))
        if recent:
            sections.append(RECENT_HEADER + "\n" + format_pairs(recent))
    elif recent:
        sections.append(PREVIOUS_HEADER + "\n" + format_pairs(recent))
    sections.append(INSTRUCTIONS)
    return SECTION_SEPARATOR.join(sections)


def _recent_exchanges(session_pk: int, limit: int) -> list[Exchange]:
    if limit <= 0:
        return []
    rows = (
        Episode.objects.for_session(session_pk)
        .order_by("-pk")
        .values_list("pk", "user_input", "response")[:limit]
    )
    return [Exchange(pk, user_input, response) for pk, user_input, response in reversed(list(rows))]


def _summary_chain(session_pk: int, before_episode_id: int | None, limit: int) -> list[SummaryPart]:
    """The newest ``limit`` rows that cover at least one episode older than
    the recent window, oldest first (read newest first on the
    ``(session, last_episode_id)`` index, so a long chain costs no more).

    A row lying wholly inside the recent window adds nothing the full
    episodes do not already say, so it is left out.
    """
    qs = Summary.objects.filter(session_id=session_pk)
    if before_episode_id is not None:
        qs = qs.filter(first_episode_id__lt=before_episode_id)
    rows = qs.order_by("-last_episode_id", "-pk").values_list(
        "pk", "content", "first_episode_id", "last_episode_id"
    )[:limit]
    return [SummaryPart(*row) for row in reversed(list(rows))]


def _uncovered_exchanges(session_pk: int, after_id: int, before_id: int | None) -> list[Exchange]:
    """The oldest episodes between the end of the summary chain and the
    recent window, as many as the digest can quote."""
    qs = Episode.objects.after(session_pk, after_id)
    if before_id is not None:
        qs = qs.filter(pk__lt=before_id)
    rows = qs.order_by("pk").values_list("pk", "user_input", "response")[:DIGEST_EPISODES]
    return [Exchange(*row) for row in rows]


def build_context(*, session: ChatSession, question: str, budget: int | None = None) -> ContextResult:
    """Assemble the prompt for the next reply to ``question`` in ``session``.

    At most three queries whatever the session's length: the last
    ``CONTEXT_RECENT_EPISODES`` episodes, the newest ``CONTEXT_MAX_SUMMARIES``
    summary rows older than them, and the first few episodes no row covers
    yet (only when there can be any).

    Under ``budget`` (tokens), the oldest summary rows are left out first,
    then the digest; the question and the recent episodes always stay, so a
    budget smaller than they are yields a prompt over budget
    (``within_budget`` is then false).
    """
    window = settings.CONTEXT_RECENT_EPISODES
    max_summaries = settings.CONTEXT_MAX_SUMMARIES
    recent = _recent_exchanges(session.pk, window)
    not_read: SummaryPart | None = None
    # With a window of 0 every episode is "older"; with a short session the
    # window holds everything and nothing older can exist.
    if window > 0 and len(recent) < window:
        chain: list[SummaryPart] = []
        uncovered: list[Exchange] = []
    else:
        window_start = recent[0].id if recent else None
        # One row more than used tells whether older rows exist beyond the cap.
        chain = _summary_chain(session.pk, window_start, max_summaries + 1)
        if len(chain) > max_summaries:
            not_read, chain = chain[0], chain[1:]
        covered_until = max((part.last_episode_id for part in chain), default=0)
        if window_start is not None and covered_until >= window_start - 1:
            uncovered = []
        else:
            uncovered = _uncovered_exchanges(session.pk, covered_until, window_start)
    has_earlier = bool(chain or uncovered or not_read)

    digest_text = extractive_digest((ex.user_input, ex.response) for ex in uncovered)
    # Candidates for the summary section, oldest first: the order the budget drops them in.
    candidates: list[tuple[str, int | None, str]] = [("summary", part.id, part.content) for part in chain]
    if digest_text:
        candidates.append(("digest", None, digest_text))

    def render(kept: Sequence[tuple[str, int | None, str]]) -> str:
        return render_prompt(
            question=question,
            recent=recent,
            earlier=[text for _, _, text in kept],
            has_earlier_episodes=has_earlier,
        )

    kept = candidates
    prompt = render(kept)
    token_count = count_tokens(prompt)
    if budget is not None and token_count > budget:
        kept, prompt, token_count = _fit(candidates, budget, render, full_count=token_count)

    kept_summary_ids = [pk for kind, pk, _ in kept if kind == "summary" and pk is not None]
    kept_set = set(kept_summary_ids)
    digest_kept = any(kind == "digest" for kind, _, _ in kept)
    digest_ids = [ex.id for ex in uncovered]
    omitted: dict[str, Any] = {
        "summaries": ([not_read.id] if not_read else [])
        + [part.id for part in chain if part.id not in kept_set],
        "digest": [] if digest_kept else digest_ids,
        # Rows older than ``not_read`` were not read at all; this bounds them.
        "summaries_before_episode": not_read.last_episode_id + 1 if not_read else None,
    }
    return ContextResult(
        prompt=prompt,
        token_count=token_count,
        full_history_tokens=full_history_tokens(session=session, question=question),
        summaries=kept_summary_ids,
        recent=[ex.id for ex in recent],
        digest=digest_ids if digest_kept else [],
        omitted=omitted,
        budget=budget,
    )


def _fit(
    candidates: list[tuple[str, int | None, str]],
    budget: int,
    render: Callable[[Sequence[tuple[str, int | None, str]]], str],
    *,
    full_count: int,
) -> tuple[list[tuple[str, int | None, str]], str, int]:
    """Leave out candidates from the oldest end until the prompt fits ``budget``.

    Each piece's own token count (plus its separator) estimates what leaving
    it out saves, so the prompt is tokenized only a few times whatever the
    chain's length; the exact count of the rendered prompt decides, since
    tokens at the joins can differ by one or two from the estimate.
    ``full_count`` is the token count of the prompt with every candidate.
    """
    separator_tokens = count_tokens(SECTION_SEPARATOR)
    estimate = full_count
    drop = 0
    while estimate > budget and drop < len(candidates):
        estimate -= count_tokens(candidates[drop][2]) + separator_tokens
        drop += 1
    prompt = render(candidates[drop:])
    token_count = count_tokens(prompt)
    while token_count > budget and drop < len(candidates):
        drop += 1
        prompt = render(candidates[drop:])
        token_count = count_tokens(prompt)
    # The estimate may have dropped one piece too many: keep it if it fits.
    while drop > 0:
        wider = render(candidates[drop - 1 :])
        wider_count = count_tokens(wider)
        if wider_count > budget:
            break
        drop -= 1
        prompt, token_count = wider, wider_count
    return candidates[drop:], prompt, token_count


def full_history_tokens(*, session: ChatSession, question: str) -> int:
    """What the prompt would cost with every episode in full: the session's
    token counter plus the question and the layout around them. Constant
    cost; the per-pair labels ("Q1:", "A1:") are not counted."""
    skeleton = render_prompt(question=question, recent=[], earlier=[], has_earlier_episodes=False)
    return session.cached_total_tokens + count_tokens(skeleton)

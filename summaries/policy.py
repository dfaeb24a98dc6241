"""The rolling summarization policy, as pure decisions over data already read.

Nothing here touches the database or the network, so every rule can be
tested directly:

- which row a pass writes (fresh row, cumulative update, or new row; curated rows never updated);
- which episodes go into one call (oldest first, at most SUMMARY_MAX_CHARS of
  episode text; only a single episode longer than the cap is cut, keeping its
  most recent text, and the cut is counted);
- the prompt (the fresh or update text, word for word).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from summaries.prompts import EXCHANGE_SEPARATOR, format_exchange, fresh_prompt, update_prompt
from summaries.selectors import EpisodeText


class Action(enum.Enum):
    CREATE = "create"  # a new row, fresh prompt
    UPDATE = "update"  # cumulative update of the latest row, update prompt


@dataclass(frozen=True, slots=True)
class RowSnapshot:
    """What a pass read of the row it may update; the write checks it is unchanged."""

    pk: int
    content: str
    token_count: int
    first_episode_id: int
    last_episode_id: int
    curated: bool
    updated_at: datetime


def choose_action(latest: RowSnapshot | None, *, max_tokens: int) -> Action:
    """Which row a pass writes. A curated row is a person's text: it is never
    rewritten automatically, so the pass starts a new row after it. Nor is a
    row emptied for its regeneration after an exchange it covered was deleted
    (``summaries.forgetting``): an update would fold its range into nothing."""
    if latest is None or latest.curated or latest.token_count >= max_tokens or not latest.content:
        return Action.CREATE
    return Action.UPDATE


@dataclass(frozen=True, slots=True)
class Chunk:
    """The episodes of one call and their text."""

    first_episode_id: int
    last_episode_id: int
    episode_ids: tuple[int, ...]
    context: str
    truncated_chars: int  # characters cut from a single over-long episode


def build_chunk(episodes: Sequence[EpisodeText], *, max_chars: int) -> Chunk:
    """Take episodes oldest first while their formatted text fits ``max_chars``.

    At least one episode is always taken, so a backlog always moves forward;
    when that first one alone is longer than the cap, its oldest characters
    are cut (the most recent text is kept) and the cut is counted.
    """
    if not episodes:
        raise ValueError("build_chunk needs at least one episode")
    parts: list[str] = []
    ids: list[int] = []
    length = 0
    for pk, user_input, response in episodes:
        text = format_exchange(user_input, response)
        added = len(text) + (len(EXCHANGE_SEPARATOR) if parts else 0)
        if parts and length + added > max_chars:
            break
        parts.append(text)
        ids.append(pk)
        length += added
    truncated = 0
    if len(parts) == 1 and len(parts[0]) > max_chars:
        truncated = len(parts[0]) - max_chars
        parts[0] = parts[0][-max_chars:]
    return Chunk(
        first_episode_id=ids[0],
        last_episode_id=ids[-1],
        episode_ids=tuple(ids),
        context=EXCHANGE_SEPARATOR.join(parts),
        truncated_chars=truncated,
    )


def build_prompt(action: Action, chunk: Chunk, previous_summary: str | None) -> str:
    if action is Action.UPDATE:
        if previous_summary is None:
            raise ValueError("an update needs the previous summary")
        return update_prompt(previous_summary, chunk.context)
    return fresh_prompt(chunk.context)


@dataclass(frozen=True, slots=True)
class PassPlan:
    """One model call: what it folds, into which row, with which prompt.

    ``covered_through`` is how far the session's summaries reached when the
    plan was made; the write refuses the result if that moved meanwhile.
    """

    session_pk: int
    action: Action
    target: RowSnapshot | None  # the row an UPDATE extends
    covered_through: int
    chunk: Chunk
    prompt: str

    @property
    def episode_range(self) -> str:
        return f"{self.chunk.first_episode_id}-{self.chunk.last_episode_id}"


def plan_pass(
    *,
    session_pk: int,
    latest: RowSnapshot | None,
    covered_through: int,
    episodes: Sequence[EpisodeText],
    max_tokens: int,
    max_chars: int,
) -> PassPlan:
    """Plan the next call over the oldest un-summarized ``episodes``."""
    action = choose_action(latest, max_tokens=max_tokens)
    chunk = build_chunk(episodes, max_chars=max_chars)
    prompt = build_prompt(action, chunk, latest.content if action is Action.UPDATE and latest else None)
    return PassPlan(
        session_pk=session_pk,
        action=action,
        target=latest if action is Action.UPDATE else None,
        covered_through=covered_through,
        chunk=chunk,
        prompt=prompt,
    )

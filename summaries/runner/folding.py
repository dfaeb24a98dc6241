"""Episodes folded into summaries in memory, for the reworks (a regenerated
row, a rebuilt chain): chunks oldest first, one model call each, nothing
stored here."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from summaries import leases, selectors
from summaries.models import UtilityCall
from summaries.policy import Action, build_chunk, build_prompt
from summaries.runner.calls import CallSpan, Client, _call, _log
from summaries.runner.results import RunResult, _LeaseLost
from summaries.services import ModelResult, RebuiltRow


@dataclass
class _Folded:
    """A row computed in memory and the cost records of the calls behind it."""

    row: RebuiltRow
    call_pks: list[int | None]


def _fold_range(
    session_pk: int,
    after_id: int,
    through_id: int,
    client: Client,
    session_uuid: str,
    result: RunResult,
    *,
    owner: str,
    kind: UtilityCall.Kind,
    start_new_rows: bool,
    spent: list[int | None],
) -> list[_Folded]:
    """Summaries of the episodes in ``(after_id, through_id]`` computed in memory.

    The same policy as a normal run: chunks oldest first within the cap, the
    first chunk of a row with the fresh prompt, later ones as cumulative
    updates; with ``start_new_rows`` a row that reaches SUMMARY_MAX_TOKENS is
    closed and the next chunk starts a new one (a rebuilt chain), otherwise
    everything goes into one text (a regenerated row keeps its range).
    The cost record of every call is appended to ``spent`` as it is made.
    """
    rows: list[_Folded] = []
    current: RebuiltRow | None = None
    current_calls: list[int | None] = []
    cursor = after_id
    while cursor < through_id:
        episodes = selectors.tail_for_chunk(
            session_pk, after_id=cursor, through_id=through_id, max_chars=settings.SUMMARY_MAX_CHARS
        )
        if not episodes:
            break
        chunk = build_chunk(episodes, max_chars=settings.SUMMARY_MAX_CHARS)
        close_current = (
            current is not None and start_new_rows and count_tokens_of(current) >= settings.SUMMARY_MAX_TOKENS
        )
        if current is not None and close_current:
            rows.append(_Folded(current, current_calls))
            current, current_calls = None, []
        action = Action.CREATE if current is None else Action.UPDATE
        prompt = build_prompt(action, chunk, current.result.text if current else None)
        # A rebuild may take many calls: extend the lease before each one.
        if not leases.hold(session_pk, owner):
            raise _LeaseLost
        result.calls += 1
        span = CallSpan(
            session_pk=session_pk,
            session_uuid=session_uuid,
            first_episode_id=chunk.first_episode_id,
            last_episode_id=chunk.last_episode_id,
            kind=kind,
            log_kind=f"{kind.value}-{action.value}",
        )
        answer, call_pk = _call(client, prompt, span)
        spent.append(call_pk)
        current_calls.append(call_pk)
        _log(
            session_uuid,
            span.episode_range,
            kind=span.log_kind,
            outcome="computed",
            prompt_tokens=answer.prompt_tokens,
            completion_tokens=answer.completion_tokens,
            duration_ms=answer.duration_ms,
            prompt=prompt,
            answer=answer.text,
        )
        if current is None:
            current = RebuiltRow(chunk.first_episode_id, chunk.last_episode_id, answer, chunk.truncated_chars)
        else:
            current = RebuiltRow(
                current.first_episode_id,
                chunk.last_episode_id,
                _merge_cost(current.result, answer),
                current.truncated_chars + chunk.truncated_chars,
            )
        cursor = chunk.last_episode_id
    if current is not None:
        rows.append(_Folded(current, current_calls))
    return rows


def count_tokens_of(row: RebuiltRow) -> int:
    from sessions_app.tokens import count_tokens

    return count_tokens(row.result.text.strip())


def _merge_cost(previous: ModelResult, latest: ModelResult) -> ModelResult:
    """The latest text with the cost of every call that went into it."""
    return ModelResult(
        text=latest.text,
        model=latest.model,
        prompt_tokens=previous.prompt_tokens + latest.prompt_tokens,
        completion_tokens=previous.completion_tokens + latest.completion_tokens,
        duration_ms=previous.duration_ms + latest.duration_ms,
    )

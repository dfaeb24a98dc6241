"""Putting the notes about the person into an assembled context: right after
the question, in every layout (the seed's, the hierarchical one, the whole
history), with their ids and those left out in the payload."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from notes.context import NotesBlock, notes_block
from sessions_app.models import ChatSession
from sessions_app.tokens import count_tokens
from summaries.context.budget import ContextTooLarge
from summaries.context.layout import QUESTION_LABEL, SECTION_SEPARATOR

if TYPE_CHECKING:
    from summaries.context import ContextResult


def notes_first(
    assemble: Callable[[int], ContextResult], *, session: ChatSession, question: str, budget: int
) -> ContextResult:
    """The context ``assemble(room)`` builds within what the notes ``session``
    can see leave of ``budget``, with the notes after its question. When the
    question alone needs what the notes would take, the notes are left out."""
    block = notes_block(session=session, question=question, budget=budget)
    if not block.text:
        return with_notes(assemble(budget), block, question)
    try:
        result = assemble(budget - block.tokens)
    except ContextTooLarge:
        block = NotesBlock(omitted=block.ids + block.omitted)
        result = assemble(budget)
    return with_notes(result, block, question, budget=budget)


def with_notes(
    result: ContextResult, block: NotesBlock, question: str, *, budget: int | None = None
) -> ContextResult:
    """``result`` with ``block`` after its question; ``budget``: the whole
    budget, restored on the result (it was assembled within what the notes left)."""
    result.omitted["notes"] = list(block.omitted)
    if budget is not None:
        result.budget = budget
    if not block.text:
        return result
    head = f"{QUESTION_LABEL}{question}"
    if not result.prompt.startswith(head):  # never: every layout opens with the question
        result.omitted["notes"] = block.ids + block.omitted
        return result
    result.prompt = head + SECTION_SEPARATOR + block.text + result.prompt[len(head) :]
    result.token_count = count_tokens(result.prompt)
    if not result.whole:
        result.full_history_tokens += block.tokens
    result.notes = list(block.ids)
    return result

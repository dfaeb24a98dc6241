"""Writes in OpenAI's message format: ``{"messages": [{"role": "user", ...},
{"role": "assistant", ...}, ...]}`` paired into exchanges.

What chat-history interfaces hand over (the Agents SDK's items, LangChain's
messages converted). A user message opens an exchange; the first assistant
text after it is its reply; anything else (system and developer messages,
tool calls and their output, reasoning, a second assistant message) is kept
in the exchange's ``metadata.items``, in order, with the user message and
the reply standing as ``{"type": "nexus_text", "field": "user_input"}`` and
``... "response"}``, so a client rebuilds the exchange's items as they were
sent. An exchange of a user message and its reply alone keeps no items.

Items before the first user message continue the session's newest
exchange: the reply of one stored without it (a user message is stored
before its reply, e.g. by an agent framework that saves its input before
the model answers), or more items of it.

The newest item is taken back off in one transaction (``newest_item_pop``:
the Agents SDK's ``pop_item``).

Every text and the metadata meet the REST API's limits
(``sessions_app.validation``); a problem is reported under the name of the
message it comes from (``messages[3].content``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from sessions_app.errors import SessionNotFound
from sessions_app.history import episode_delete, reply_fill
from sessions_app.models import ChatSession, Episode
from sessions_app.services import EpisodeInput, episodes_bulk_create
from sessions_app.validation import batch_problem, episode_text_problem, metadata_problem

TEXT_PARTS = frozenset({"text", "input_text", "output_text"})
USER_PLACE = {"type": "nexus_text", "field": "user_input"}
REPLY_PLACE = {"type": "nexus_text", "field": "response"}


class MessagesInvalid(ValueError):
    """A problem with the messages, under the name of the field it concerns."""

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(problem)
        self.name = name


def message_text(item: Any) -> str | None:
    """The text of a message item whose content is text (a string or text
    parts); None for any other item or content."""
    if not isinstance(item, dict) or item.get("type", "message") != "message":
        return None
    if item.get("tool_calls") or item.get("function_call"):
        return None  # a call of a tool: kept as an item, with what it asks
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list) and content:
        parts = [part for part in content if isinstance(part, dict) and part.get("type") in TEXT_PARTS]
        if len(parts) == len(content) and all(isinstance(part.get("text"), str) for part in parts):
            return "".join(part["text"] for part in parts)
    return None


@dataclass
class Draft:
    """An exchange being gathered from the messages."""

    at: int  # index of its first message
    user_input: str | None = None
    response: str | None = None
    items: list[dict] = field(default_factory=list)

    def metadata(self) -> dict | None:
        plain = [USER_PLACE, REPLY_PLACE] if self.response is not None else [USER_PLACE]
        return None if self.items == plain or not self.items else {"items": self.items}


def drafts_of(messages: Any) -> tuple[Draft, list[Draft]]:
    """The items that continue the newest exchange (a draft without a user
    message) and the new exchanges; ``MessagesInvalid`` for the first problem."""
    if not isinstance(messages, list) or not messages:
        raise MessagesInvalid("messages", "Must be a non-empty list of message objects.")
    lead = Draft(at=0)
    drafts: list[Draft] = []
    for index, item in enumerate(messages):
        if not isinstance(item, dict):
            raise MessagesInvalid(f"messages[{index}]", "Must be an object.")
        current = drafts[-1] if drafts else lead
        role, text = item.get("role"), message_text(item)
        if role == "user":
            if text is None:
                raise MessagesInvalid(f"messages[{index}].content", "A user message must be text.")
            _check_text(text, f"messages[{index}].content", allow_empty=False)
            drafts.append(Draft(at=index, user_input=text, items=[USER_PLACE]))
        elif role == "assistant" and text is not None and current.response is None:
            _check_text(text, f"messages[{index}].content", allow_empty=True)
            current.response = text
            current.items.append(REPLY_PLACE)
        else:
            current.items.append(item)
    problem = batch_problem(len(drafts)) if drafts else None
    if problem:
        raise MessagesInvalid("messages", problem)
    return lead, drafts


def _check_text(text: str, name: str, *, allow_empty: bool) -> None:
    if problem := episode_text_problem(text, allow_empty=allow_empty):
        raise MessagesInvalid(name, problem)


def _checked_metadata(metadata: dict | None, at: int) -> dict | None:
    if metadata is not None and (problem := metadata_problem(metadata)):
        raise MessagesInvalid(f"messages[{at}]", f"Its exchange's items do not fit in metadata: {problem}")
    return metadata


def messages_write(*, session: ChatSession, messages: Any) -> list[Episode]:
    """Store the messages (module docstring) in one transaction: the
    exchange they continue first, if any, then the new ones. Items before
    the first user message of a session with no exchange yet go with that
    first exchange. ``MessagesInvalid`` (nothing stored), ``SessionNotFound``."""
    lead, drafts = drafts_of(messages)
    with transaction.atomic():
        newest = _newest_locked(session) if lead.items else None
        continued: list[Episode] = []
        if newest is not None:
            continued = [_continue(session, newest, lead)]
        elif lead.items:
            if lead.response is not None or not drafts:
                raise MessagesInvalid(
                    "messages[0]",
                    "The session has no exchange for these messages to continue: begin with a user message.",
                )
            drafts[0].items[:0] = lead.items
            drafts[0].at = 0
        new: list[EpisodeInput] = []
        for draft in drafts:
            item: EpisodeInput = {"user_input": draft.user_input or "", "response": draft.response or ""}
            if (metadata := _checked_metadata(draft.metadata(), draft.at)) is not None:
                item["metadata"] = metadata
            new.append(item)
        return continued + episodes_bulk_create(session=session, items=new)


def _newest_locked(session: ChatSession) -> Episode | None:
    """The session's newest exchange, under the session's row lock."""
    newest_pk = (
        ChatSession.objects.select_for_update()
        .filter(pk=session.pk)
        .values_list("cached_last_episode_id", flat=True)
        .first()
    )
    if newest_pk is None:
        if not ChatSession.objects.filter(pk=session.pk).exists():
            raise SessionNotFound
        return None
    return Episode.objects.filter(session_id=session.pk, pk=newest_pk).first()


def _continue(session: ChatSession, episode: Episode, lead: Draft) -> Episode:
    """Add ``lead`` (items before any user message) to ``episode``, the session's newest exchange."""
    items = list(episode.metadata.get("items") or [USER_PLACE, *([REPLY_PLACE] if episode.response else [])])
    added = list(lead.items)
    if lead.response is not None and episode.response:
        # It has its reply already: this assistant message is one more item.
        added[added.index(REPLY_PLACE)] = {"role": "assistant", "content": lead.response}
    metadata = {**episode.metadata, "items": items + added}
    if metadata["items"] == [USER_PLACE, REPLY_PLACE]:
        metadata.pop("items")
    _checked_metadata(metadata, 0)
    if lead.response is not None and not episode.response:
        reply_fill(session=session, episode=episode, response=lead.response)
    if metadata != episode.metadata:
        Episode.objects.filter(pk=episode.pk).update(metadata=metadata)
        episode.metadata = metadata
    return episode


def exchange_items(episode: Episode) -> list[dict]:
    """The items ``episode`` was written from, in their order: its user
    message, its reply (when it has one) and whatever else it keeps."""
    user = {"role": "user", "content": episode.user_input}
    reply = {"role": "assistant", "content": episode.response}
    kept = (episode.metadata or {}).get("items")
    if not kept:
        return [user, reply] if episode.response else [user]
    return [user if item == USER_PLACE else reply if item == REPLY_PLACE else item for item in kept]


def newest_item_pop(*, session: ChatSession) -> dict | None:
    """Take the session's newest item off and return it; ``None`` when the
    session has no exchange. Its exchange is deleted (with all derived from
    it, ``history.episode_delete``) and the exchange's other items written
    again (``messages_write``), all in one transaction under the session's
    row lock: no write lands in between, and a failure changes nothing.
    ``MessagesInvalid`` when the items left cannot stand alone (items before
    the session's first user message, once that message is taken)."""
    with transaction.atomic():
        newest = _newest_locked(session)
        if newest is None:
            return None
        items = exchange_items(newest)
        episode_delete(session=session, episode_pk=newest.pk)
        if len(items) > 1:
            messages_write(session=session, messages=items[:-1])
    return items[-1]

"""An exchange as the items it was written from (OpenAI messages and
Responses items), and back: what Nexus keeps in ``metadata.items``."""

from __future__ import annotations

from typing import Any

USER_PLACE = {"type": "nexus_text", "field": "user_input"}
REPLY_PLACE = {"type": "nexus_text", "field": "response"}


def exchange_items(episode: dict[str, Any]) -> list[dict[str, Any]]:
    """The items of one exchange, in the order they were written: the user
    message, the reply (when there is one), and whatever else it carried
    (system messages, tool calls and their output)."""
    user = {"role": "user", "content": episode["user_input"]}
    reply = {"role": "assistant", "content": episode["response"]}
    kept = (episode.get("metadata") or {}).get("items")
    if not kept:
        return [user, reply] if episode["response"] else [user]
    out = []
    for item in kept:
        if item == USER_PLACE:
            out.append(user)
        elif item == REPLY_PLACE:
            out.append(reply)
        else:
            out.append(item)
    return out


def history_items(episodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [item for episode in episodes for item in exchange_items(episode)]

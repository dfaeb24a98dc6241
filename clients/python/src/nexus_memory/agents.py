"""A Nexus session as the OpenAI Agents SDK's ``Session``: the agent's turns
are stored as exchanges (``Runner.run(agent, ..., session=NexusSession(...))``),
so they are searchable, summarized, and in Nexus's context.

The SDK saves a turn's input before the model answers and its output after:
the user message is stored as an exchange without its reply, and the reply
then fills it in (items before any user message continue the newest
exchange). Tool calls and other items are kept with their exchange, in order.

The SDK sends traces to OpenAI with the ``OPENAI_API_KEY`` it is given; when
that is a Nexus key, turn tracing off: ``agents.set_tracing_disabled(True)``.
"""

from __future__ import annotations

from typing import Any

from nexus_memory.client import NEWEST_MAX, AsyncNexusClient
from nexus_memory.items import exchange_items, history_items


class NexusSession:
    """The Agents SDK ``Session`` protocol over one Nexus session (its uuid)."""

    session_settings = None

    def __init__(
        self,
        session_id: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        client: AsyncNexusClient | None = None,
    ) -> None:
        self.session_id = str(session_id)
        self.client = client or AsyncNexusClient(
            **({"base_url": base_url} if base_url else {}), api_key=api_key
        )

    @classmethod
    async def create(
        cls, *, title: str = "", base_url: str | None = None, api_key: str | None = None
    ) -> NexusSession:
        """A new Nexus session for an agent's conversation."""
        client = AsyncNexusClient(**({"base_url": base_url} if base_url else {}), api_key=api_key)
        created = await client.create_session(title=title)
        return cls(created["id"], client=client)

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The conversation's items, oldest first (the latest ``limit`` of them)."""
        if limit is not None and limit <= 0:
            return []
        if limit is None or limit > NEWEST_MAX:
            episodes = await self.client.list_episodes(self.session_id)
        else:
            # Every exchange holds one item at least: the newest ``limit`` hold enough.
            episodes = await self.client.newest_episodes(self.session_id, limit)
        items = history_items(episodes)
        return items if limit is None else items[-limit:]

    async def add_items(self, items: list[Any]) -> None:
        if items:
            await self.client.add_messages(self.session_id, [_plain(item) for item in items])

    async def pop_item(self) -> Any | None:
        """Remove the newest item: its exchange is deleted (with what was derived
        from it) and its other items stored again as an exchange."""
        newest = await self.client.newest_episodes(self.session_id, 1)
        if not newest:
            return None
        items = exchange_items(newest[0])
        await self.client.delete_episode(self.session_id, newest[0]["id"])
        if len(items) > 1:
            await self.client.add_messages(self.session_id, items[:-1])
        return items[-1]

    async def clear_session(self) -> None:
        await self.client.clear_episodes(self.session_id)


def _plain(item: Any) -> Any:
    """An item as JSON: the SDK's items are dicts, or pydantic models in some paths."""
    dump = getattr(item, "model_dump", None)
    return dump(exclude_unset=True, mode="json") if callable(dump) else item

"""A Nexus session as the OpenAI Agents SDK's ``Session``: the agent's turns
are stored as exchanges (``Runner.run(agent, ..., session=NexusSession(...))``),
so they are searchable, summarized, and in Nexus's context.

The SDK saves a turn's input before the model answers and its output after:
the user message is stored as an exchange without its reply, and the reply
then fills it in (items before any user message continue the newest
exchange). Tool calls and other items are kept with their exchange, in order.

A session that made its own client (given ``base_url``/``api_key``, or by
``create``) closes it: ``await session.aclose()``, or ``async with``; a
client passed in is left to whoever made it.

The SDK sends traces to OpenAI with the ``OPENAI_API_KEY`` it is given; when
that is a Nexus key, turn tracing off: ``agents.set_tracing_disabled(True)``.
"""

from __future__ import annotations

from typing import Any

from nexus_memory.client import NEWEST_MAX, AsyncNexusClient
from nexus_memory.items import history_items


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
        self._owns_client = client is None
        self.client = client or AsyncNexusClient(
            **({"base_url": base_url} if base_url else {}), api_key=api_key
        )

    @classmethod
    async def create(
        cls, *, title: str = "", base_url: str | None = None, api_key: str | None = None
    ) -> NexusSession:
        """A new Nexus session for an agent's conversation, with a client of its own (close it)."""
        session = cls("", base_url=base_url, api_key=api_key)
        try:
            created = await session.client.create_session(title=title)
        except BaseException:
            await session.aclose()
            raise
        session.session_id = str(created["id"])
        return session

    async def aclose(self) -> None:
        """Close the client this session made (one passed in stays open)."""
        if self._owns_client:
            await self.client.aclose()

    async def __aenter__(self) -> NexusSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

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
        """Remove the newest item and return it: one request, in which the
        server deletes its exchange and stores the exchange's other items
        again (no write of another caller lands in between)."""
        return await self.client.pop_newest_item(self.session_id)

    async def clear_session(self) -> None:
        await self.client.clear_episodes(self.session_id)


def _plain(item: Any) -> Any:
    """An item as JSON: the SDK's items are dicts, or pydantic models in some paths."""
    dump = getattr(item, "model_dump", None)
    return dump(exclude_unset=True, mode="json") if callable(dump) else item

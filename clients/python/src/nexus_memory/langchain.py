"""LangChain over Nexus: a session's exchanges as a ``BaseChatMessageHistory``
(``RunnableWithMessageHistory`` and the rest), and its context as a
retriever (a Runnable: ``retriever.invoke(question)``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage, convert_to_messages, convert_to_openai_messages
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, PrivateAttr

from nexus_memory.client import DEFAULT_BASE_URL, AsyncNexusClient, NexusClient
from nexus_memory.items import history_items

#: Items LangChain has messages for (Responses items such as tool calls are left out).
_ROLES = {"user", "assistant", "system", "developer", "tool"}


@asynccontextmanager
async def _async_client(
    given: AsyncNexusClient | None, base_url: str, api_key: str | None
) -> AsyncIterator[AsyncNexusClient]:
    """``given``, left open; else a client for this one call, closed after it
    (LangChain never closes a history or a retriever, and an event loop
    that ends would leave a longer-lived client's connections behind)."""
    if given is not None:
        yield given
        return
    async with AsyncNexusClient(base_url=base_url, api_key=api_key) as made:
        yield made


def _messages(episodes: list[dict[str, Any]]) -> list[BaseMessage]:
    items = [item for item in history_items(episodes) if item.get("role") in _ROLES]
    for item in items:
        if item.get("role") == "developer":
            item["role"] = "system"
    return convert_to_messages(items)


class NexusChatMessageHistory(BaseChatMessageHistory):
    """The exchanges of one Nexus session (its uuid) as chat messages: a human
    message and the AI's reply are one exchange; ``clear`` deletes them all
    (the session stays). Without ``async_client``, each async call uses a
    client of its own, closed when it ends; ``close()`` closes the synchronous
    client it made (``client`` passed in stays open)."""

    def __init__(
        self,
        session_id: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        client: NexusClient | None = None,
        async_client: AsyncNexusClient | None = None,
    ) -> None:
        self.session_id = str(session_id)
        self._owns_client = client is None
        self.client = client or NexusClient(base_url=base_url, api_key=api_key)
        self.async_client = async_client
        self._base_url = base_url
        self._api_key = api_key

    def _async(self) -> Any:
        return _async_client(self.async_client, self._base_url, self._api_key)

    def close(self) -> None:
        if self._owns_client:
            self.client.close()

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        return _messages(self.client.list_episodes(self.session_id))

    async def aget_messages(self) -> list[BaseMessage]:
        async with self._async() as nexus:
            return _messages(await nexus.list_episodes(self.session_id))

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        if messages:
            self.client.add_messages(self.session_id, convert_to_openai_messages(list(messages)))

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        if messages:
            async with self._async() as nexus:
                await nexus.add_messages(self.session_id, convert_to_openai_messages(list(messages)))

    def clear(self) -> None:
        self.client.clear_episodes(self.session_id)

    async def aclear(self) -> None:
        async with self._async() as nexus:
            await nexus.clear_episodes(self.session_id)


class NexusContextRetriever(BaseRetriever):
    """Nexus's context for a question, as one document: the prompt Nexus
    assembles from the session's summaries, the earlier exchanges that
    matter to the question and the recent ones, within ``budget`` tokens.
    Each async call uses a client of its own, closed when it ends; ``close()``
    closes the synchronous one."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    session_id: str
    base_url: str = DEFAULT_BASE_URL
    api_key: str | None = None
    budget: int | None = None
    _client: NexusClient = PrivateAttr()

    def model_post_init(self, context: Any) -> None:
        self._client = NexusClient(base_url=self.base_url, api_key=self.api_key)

    def close(self) -> None:
        self._client.close()

    def _document(self, context: dict[str, Any]) -> list[Document]:
        meta = {key: context.get(key) for key in ("token_count", "full_history_tokens", "retrieved", "recent")}
        return [Document(page_content=context["prompt"], metadata={"session_id": self.session_id, **meta})]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return self._document(self._client.get_context(self.session_id, query, budget=self.budget))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        async with _async_client(None, self.base_url, self.api_key) as nexus:
            return self._document(await nexus.get_context(self.session_id, query, budget=self.budget))

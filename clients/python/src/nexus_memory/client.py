"""``NexusClient`` and ``AsyncNexusClient``: sessions, exchanges, context and
search over Nexus's REST API, with ``Authorization: Bearer <api_key>``.

Both share every call (``_Calls``): a call is one request and the part of
its answer it returns; only how it is sent differs (``httpx.Client`` or
``httpx.AsyncClient``). Errors are typed (``nexus_memory.errors``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import httpx

from nexus_memory.errors import NexusConnectionError, raise_for

DEFAULT_BASE_URL = "http://127.0.0.1:8000"
#: The most ``?newest=`` takes (the server's API_MAX_PAGE_SIZE default).
NEWEST_MAX = 1000


def _headers(api_key: str | None) -> dict[str, str]:
    key = api_key if api_key is not None else os.environ.get("NEXUS_API_KEY")
    headers = {"Accept": "application/json", "User-Agent": "nexus-memory-python"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return headers


def _pick(response: httpx.Response, key: str | None) -> Any:
    raise_for(response)
    if response.status_code == 204 or not response.content:
        return None
    data = response.json()
    return data[key] if key else data


def _episode_body(
    user_input: str, response: str, metadata: Mapping[str, Any] | None, created_at: datetime | str | None
) -> dict[str, Any]:
    body: dict[str, Any] = {"user_input": user_input, "response": response}
    if metadata is not None:
        body["metadata"] = dict(metadata)
    if created_at is not None:
        body["created_at"] = created_at.isoformat() if isinstance(created_at, datetime) else created_at
    return body


class _Calls:
    """Every call, as ``self._call(method, path, pick=..., ...)``: its value
    (sync) or an awaitable of it (async)."""

    _base: str

    def _call(self, method: str, path: str, *, pick: str | None = None, **kwargs: Any) -> Any:
        raise NotImplementedError

    def _url(self, path: str) -> str:
        """A path under the base URL; a whole URL (a page's ``next`` link) as it is."""
        return path if path.startswith(("http://", "https://")) else self._base + path

    # --- sessions
    def create_session(self, *, title: str = "", metadata: Mapping[str, Any] | None = None) -> Any:
        """A new session (its ``id`` is the uuid every other call names)."""
        return self._call("POST", "/api/sessions/", json={"title": title, "metadata": dict(metadata or {})})

    def get_session(self, session_id: str) -> Any:
        return self._call("GET", f"/api/sessions/{session_id}/")

    def list_sessions(self, *, page: int = 1) -> Any:
        """One page of the caller's sessions, most recently active first."""
        return self._call("GET", "/api/sessions/", params={"page": page}, pick="results")

    def update_session(
        self, session_id: str, *, title: str | None = None, metadata: Mapping[str, Any] | None = None
    ) -> Any:
        body: dict[str, Any] = {}
        if title is not None:
            body["title"] = title
        if metadata is not None:
            body["metadata"] = dict(metadata)
        return self._call("PATCH", f"/api/sessions/{session_id}/", json=body)

    def delete_session(self, session_id: str) -> Any:
        return self._call("DELETE", f"/api/sessions/{session_id}/")

    # --- exchanges
    def add_episode(
        self,
        session_id: str,
        user_input: str,
        response: str = "",
        *,
        metadata: Mapping[str, Any] | None = None,
        created_at: datetime | str | None = None,
        idempotency_key: str | None = None,
    ) -> Any:
        """Store one exchange; ``response`` may be empty and filled in later (``fill_reply``)."""
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        body = _episode_body(user_input, response, metadata, created_at)
        return self._call("POST", f"/api/sessions/{session_id}/episodes/", json=body, headers=headers)

    def add_messages(self, session_id: str, messages: Sequence[Mapping[str, Any]]) -> Any:
        """Store OpenAI messages (or Responses items), paired into exchanges;
        items before the first user message continue the newest exchange."""
        body = {"messages": [dict(m) for m in messages]}
        return self._call("POST", f"/api/sessions/{session_id}/episodes/", json=body)

    def get_episode(self, session_id: str, episode_id: int) -> Any:
        return self._call("GET", f"/api/sessions/{session_id}/episodes/{episode_id}/")

    def newest_episodes(self, session_id: str, count: int) -> Any:
        """The newest ``count`` exchanges (at most 1,000), oldest first."""
        params = {"newest": min(count, NEWEST_MAX)}
        return self._call("GET", f"/api/sessions/{session_id}/episodes/", params=params, pick="results")

    def fill_reply(self, session_id: str, episode_id: int, response: str) -> Any:
        """The reply of an exchange stored without one (once: ``ConflictError`` after)."""
        path = f"/api/sessions/{session_id}/episodes/{episode_id}/"
        return self._call("PATCH", path, json={"response": response})

    def delete_episode(self, session_id: str, episode_id: int) -> Any:
        """Delete one exchange and everything derived from it."""
        return self._call("DELETE", f"/api/sessions/{session_id}/episodes/{episode_id}/")

    def pop_newest_item(self, session_id: str) -> Any:
        """Take the session's newest item (message or Responses item) off and
        return it (``None`` when it has none): its exchange is deleted and the
        exchange's other items stored again, in one transaction on the server."""
        return self._call("DELETE", f"/api/sessions/{session_id}/items/newest/", pick="item")

    def clear_episodes(self, session_id: str) -> Any:
        """Delete every exchange of the session (it stays); the number deleted."""
        return self._call("DELETE", f"/api/sessions/{session_id}/episodes/", pick="deleted")

    # --- memory
    def get_context(self, session_id: str, question: str, *, budget: int | None = None) -> Any:
        """The context for the next reply: ``prompt``, ``token_count`` and what went in."""
        params: dict[str, Any] = {"question": question}
        if budget is not None:
            params["budget"] = budget
        return self._call("GET", f"/api/sessions/{session_id}/context/", params=params)

    def search(self, query: str, *, session_id: str | None = None, limit: int = 20) -> Any:
        """Exchanges that hold words of ``query``, best first (of one session, or all the caller's)."""
        path = f"/api/sessions/{session_id}/search/" if session_id else "/api/search/"
        return self._call("POST", path, json={"q": query, "limit": limit}, pick="results")


class NexusClient(_Calls):
    """Synchronous client. ``api_key``: a Nexus API key or account token (default ``NEXUS_API_KEY``).
    Close it when done (``close()``, or ``with``): an ``http_client`` passed in is left to whoever made it."""

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        http_client: httpx.Client | None = None,
    ) -> None:
        self._owns_http = http_client is None
        self._http = http_client or httpx.Client(timeout=timeout)
        self._base = base_url.rstrip("/")
        self._headers = _headers(api_key)

    def _call(self, method: str, path: str, *, pick: str | None = None, **kwargs: Any) -> Any:
        headers = {**self._headers, **(kwargs.pop("headers", None) or {})}
        try:
            response = self._http.request(method, self._url(path), headers=headers, **kwargs)
        except httpx.TransportError as exc:
            raise NexusConnectionError(f"{method} {path}: {exc}") from exc
        return _pick(response, pick)

    def list_episodes(self, session_id: str, *, page_size: int = 1000) -> list[dict[str, Any]]:
        """Every exchange of the session, oldest first (all its pages)."""
        found: list[dict[str, Any]] = []
        url: str | None = f"/api/sessions/{session_id}/episodes/?page_size={page_size}"
        while url:
            page = self._call("GET", url)
            found += page["results"]
            url = page.get("next")
        return found

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> NexusClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncNexusClient(_Calls):
    """Asynchronous client: the same calls as ``NexusClient``, awaited. Close
    it when done (``await client.aclose()``, or ``async with``): an
    ``http_client`` passed in is left to whoever made it."""

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self._owns_http = http_client is None
        self._http = http_client or httpx.AsyncClient(timeout=timeout)
        self._base = base_url.rstrip("/")
        self._headers = _headers(api_key)

    async def _call(self, method: str, path: str, *, pick: str | None = None, **kwargs: Any) -> Any:
        headers = {**self._headers, **(kwargs.pop("headers", None) or {})}
        try:
            response = await self._http.request(method, self._url(path), headers=headers, **kwargs)
        except httpx.TransportError as exc:
            raise NexusConnectionError(f"{method} {path}: {exc}") from exc
        return _pick(response, pick)

    async def list_episodes(self, session_id: str, *, page_size: int = 1000) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        url: str | None = f"/api/sessions/{session_id}/episodes/?page_size={page_size}"
        while url:
            page = await self._call("GET", url)
            found += page["results"]
            url = page.get("next")
        return found

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncNexusClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


"""Typed errors: what Nexus answered, sorted by what a caller does about it."""

from __future__ import annotations

from typing import Any

import httpx


class NexusError(Exception):
    """Nexus answered with an error (``status``, the ``detail`` it gave, the whole ``body``)."""

    def __init__(self, message: str, *, status: int | None = None, body: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class NexusConnectionError(NexusError):
    """Nexus could not be reached, or did not answer in time."""


class AuthenticationError(NexusError):
    """401 or 403: the key is missing, wrong, revoked or may not do this."""


class NotFoundError(NexusError):
    """404: no such session or exchange, or not the caller's to see."""


class ValidationError(NexusError):
    """400: bad input; ``fields`` maps each named field to its problems."""

    @property
    def fields(self) -> dict[str, Any]:
        return self.body if isinstance(self.body, dict) else {}


class ConflictError(NexusError):
    """409: e.g. a reply filled in twice; ``field`` names what conflicts."""

    @property
    def field(self) -> str | None:
        return self.body.get("field") if isinstance(self.body, dict) else None


class RateLimitError(NexusError):
    """429: too many requests or model calls; ``retry_after`` seconds to wait."""

    def __init__(self, message: str, *, status: int | None = None, body: Any = None, retry_after: float | None = None):
        super().__init__(message, status=status, body=body)
        self.retry_after = retry_after


class ServerError(NexusError):
    """5xx: Nexus or its database is unavailable; safe to retry with an Idempotency-Key."""


_BY_STATUS: dict[int, type[NexusError]] = {
    400: ValidationError,
    401: AuthenticationError,
    403: AuthenticationError,
    404: NotFoundError,
    409: ConflictError,
    413: ValidationError,
}


def raise_for(response: httpx.Response) -> None:
    """Raise the typed error for an error answer; nothing for a success."""
    if response.is_success:
        return
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text
    detail = body.get("detail") if isinstance(body, dict) else None
    message = f"{response.status_code} {response.request.method} {response.request.url.path}: {detail or body}"
    status = response.status_code
    if status == 429:
        retry = response.headers.get("Retry-After")
        raise RateLimitError(message, status=status, body=body, retry_after=float(retry) if retry else None)
    if status >= 500:
        raise ServerError(message, status=status, body=body)
    raise _BY_STATUS.get(status, NexusError)(message, status=status, body=body)

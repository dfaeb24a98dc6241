"""Python client of Nexus, conversation memory for LLM applications."""

from nexus_memory.client import AsyncNexusClient, NexusClient
from nexus_memory.errors import (
    AuthenticationError,
    ConflictError,
    NexusConnectionError,
    NexusError,
    NotFoundError,
    RateLimitError,
    ServerError,
    ValidationError,
)
from nexus_memory.items import exchange_items, history_items

__all__ = [
    "AsyncNexusClient",
    "AuthenticationError",
    "ConflictError",
    "NexusClient",
    "NexusConnectionError",
    "NexusError",
    "NotFoundError",
    "RateLimitError",
    "ServerError",
    "ValidationError",
    "exchange_items",
    "history_items",
]

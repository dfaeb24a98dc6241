"""The MCP server over stdio and streamable HTTP (see the package docstring)."""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio.to_thread
from django.conf import settings
from django.db import close_old_connections
from mcp.server import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from rest_framework import exceptions
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from summaries.mcp.registry import TOOLS, KeySource, bearer_key, key_user

#: The modules whose ``@tool`` functions the server offers.
TOOL_MODULES = ("summaries.mcp.memory_tools", "summaries.mcp.note_tools")

INSTRUCTIONS = (
    "Nexus keeps the memory of conversations. Before answering, call get_context for the "
    "question in the session; after answering, store the exchange with remember. search_memory "
    "finds earlier exchanges by their words; list_sessions names the sessions. What the person "
    "asks you to keep in mind for good (an instruction, a preference, a fact about them) is a "
    "note: add_note keeps it for every later context; list_notes, update_note and delete_note."
)


def build_server(*, fixed_key: str | None = None) -> MCPServer:
    """The server with every registered tool; ``fixed_key``: the key every call acts as (stdio)."""
    for module in TOOL_MODULES:
        importlib.import_module(module)  # registers its tools

    @asynccontextmanager
    async def lifespan(server: MCPServer) -> AsyncIterator[KeySource]:
        yield KeySource(fixed=fixed_key)

    server = MCPServer("nexus", instructions=INSTRUCTIONS, lifespan=lifespan)
    for fn in TOOLS:
        server.add_tool(fn)
    return server


def check_key(secret: str | None) -> Any:
    """The user ``secret`` acts as, from a thread of its own (the ORM is synchronous)."""
    close_old_connections()
    try:
        return key_user(secret)
    finally:
        close_old_connections()


class RequireApiKey:
    """Every HTTP request sends a working API key, else a 401 before the MCP
    transport sees it: a revoked key is refused at the next request."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        try:
            await anyio.to_thread.run_sync(check_key, bearer_key(headers.get("authorization", "")))
        except exceptions.APIException as err:
            status = 429 if isinstance(err, exceptions.Throttled) else 401
            answer = JSONResponse({"detail": str(err.detail)}, status_code=status)
            answer.headers["WWW-Authenticate"] = "Bearer"
            await answer(scope, receive, send)
            return
        await self.app(scope, receive, send)


def allowed_hosts() -> TransportSecuritySettings:
    """The Host (and browser Origin) values taken: ``DJANGO_ALLOWED_HOSTS``'s, against DNS rebinding."""
    hosts = list(settings.ALLOWED_HOSTS)
    if "*" in hosts:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    names = [h.lstrip(".") for h in hosts]
    return TransportSecuritySettings(
        allowed_hosts=[f"{name}{port}" for name in names for port in ("", ":*")],
        allowed_origins=[
            f"{scheme}://{name}{port}"
            for name in names
            for scheme in ("http", "https")
            for port in ("", ":*")
        ],
    )


def http_app() -> ASGIApp:
    """The streamable HTTP server, at ``/mcp``, behind the API key check."""
    server = build_server()
    return RequireApiKey(
        server.streamable_http_app(transport_security=allowed_hosts(), host=settings.MCP_HOST)
    )

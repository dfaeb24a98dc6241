"""The MCP server over stdio and streamable HTTP (see the package docstring)."""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio.to_thread
from django.conf import settings
from django.db import close_old_connections
from django.http import HttpRequest
from mcp.server import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from rest_framework import exceptions
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from nexus.api.throttling import anonymous_wait
from summaries.mcp.registry import TOOLS, KeySource, bearer_key, key_user, retry_seconds

#: The JSON-RPC error code of a request refused for its key or its rate
#: (in the range JSON-RPC leaves to the server).
REFUSED = -32001

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


def check_key(secret: str | None, meta: dict[str, str] | None = None) -> Any:
    """The user ``secret`` acts as, from a thread of its own (the ORM is
    synchronous). A key refused to an HTTP request (``meta``: its address)
    counts against the anonymous throttle, as on the REST API (``Throttled``
    past its rate): guessing keys is limited."""
    close_old_connections()
    try:
        return key_user(secret)
    except exceptions.AuthenticationFailed:
        if meta is None:
            raise
        request = HttpRequest()
        request.META = meta  # the throttle tells callers apart by address
        wait = anonymous_wait(request)  # type: ignore[arg-type]
        if wait is not None:
            raise exceptions.Throttled(wait) from None
        raise
    finally:
        close_old_connections()


def refusal(status: int, message: str, *, retry_after: float | None = None) -> JSONResponse:
    """A request refused before the MCP transport sees it. The body is a
    JSON-RPC error, which the SDKs' clients raise with its message (of a
    bare HTTP error they say only "Server returned an error response")."""
    answer = JSONResponse(
        {"jsonrpc": "2.0", "id": None, "error": {"code": REFUSED, "message": message}}, status_code=status
    )
    if status == 401:
        answer.headers["WWW-Authenticate"] = "Bearer"
    if retry_after is not None:
        answer.headers["Retry-After"] = str(retry_seconds(retry_after))
    return answer


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
        meta = {"REMOTE_ADDR": (scope.get("client") or ("", 0))[0]}
        if "x-forwarded-for" in headers:
            meta["HTTP_X_FORWARDED_FOR"] = headers["x-forwarded-for"]
        secret = bearer_key(headers.get("authorization", ""))
        try:
            await anyio.to_thread.run_sync(check_key, secret, meta)
        except exceptions.Throttled as err:
            message = (
                f"Too many requests with a refused key from this address: {settings.API_THROTTLE_ANON} "
                f"(API_THROTTLE_ANON); try again in {retry_seconds(err.wait)} seconds."
            )
            await refusal(429, message, retry_after=err.wait)(scope, receive, send)
            return
        except exceptions.APIException as err:
            await refusal(401, str(err.detail))(scope, receive, send)
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

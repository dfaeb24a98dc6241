"""The tool registry: ``@tool`` records a function as an MCP tool, and wraps
it so every call acts as the caller's API key, counts against that user's
rate as a REST request does (``API_THROTTLE_USER``, one window for both),
opens and closes its database connection as a request does, and answers
failures as tool errors worded like the REST API's (never a traceback)."""

from __future__ import annotations

import functools
import inspect
import logging
import math
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import close_old_connections
from django.http import Http404
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from rest_framework import exceptions
from rest_framework.exceptions import ValidationError

from nexus.api.authentication import CachedTokenAuthentication
from nexus.api.keys.services import is_key
from nexus.api.throttling import user_wait
from nexus.errors import NotFound
from nexus.failures import database_failure

logger = logging.getLogger("nexus.mcp")

F = TypeVar("F", bound=Callable[..., Any])

#: Every tool, in the order registered (``summaries.mcp.server`` adds them to the server).
TOOLS: list[Callable[..., Any]] = []

NO_KEY = "Send a Nexus API key: 'Authorization: Bearer <key>' (over stdio: NEXUS_API_KEY)."


@dataclass(frozen=True)
class KeySource:
    """Where a call's API key comes from: the request's ``Authorization``
    header over HTTP, else the key the stdio process was started with."""

    fixed: str | None = None

    def secret(self, headers: Mapping[str, str] | None) -> str | None:
        if headers is None:
            return self.fixed
        return bearer_key(headers.get("authorization", ""))


def bearer_key(header: str) -> str | None:
    scheme, _, secret = header.strip().partition(" ")
    secret = secret.strip()
    if scheme.lower() != "bearer" or not secret or " " in secret:
        return None
    return secret


def key_user(secret: str | None) -> Any:
    """The user an API key acts as (carrying the key), through the API's
    authentication; ``AuthenticationFailed`` for anything else, an account
    token included (an integration uses a key of its own)."""
    if not secret or not is_key(secret):
        raise exceptions.AuthenticationFailed(NO_KEY)
    user, _ = CachedTokenAuthentication().authenticate_credentials(secret)
    return user


def acting_user(ctx: Context) -> Any:
    source: KeySource = ctx.request_context.lifespan_context
    try:
        return key_user(source.secret(ctx.headers))
    except exceptions.AuthenticationFailed as err:
        raise ToolError(str(err.detail)) from None


def tool(fn: F) -> F:
    """Register ``fn`` (its first parameter the acting user, then the tool's
    arguments, typed: the SDK builds the schema from them) as a tool."""

    @functools.wraps(fn)
    def call(*args: Any, ctx: Context, **kwargs: Any) -> Any:
        close_old_connections()
        try:
            user = acting_user(ctx)
            if (wait := user_wait(user)) is not None:
                raise exceptions.Throttled(wait)
            return fn(user, *args, **kwargs)
        except ToolError:
            raise
        except Exception as err:  # noqa: BLE001 - every failure answers as a tool error
            raise tool_error(err) from None
        finally:
            close_old_connections()

    # What the SDK reads to build the tool's schema: ``fn``'s arguments but
    # the acting user, and the context it hands in; annotations evaluated.
    hints = typing.get_type_hints(fn)
    params = [
        param.replace(annotation=hints.get(param.name, param.annotation))
        for param in list(inspect.signature(fn).parameters.values())[1:]
    ]
    context = inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)
    call.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [*params, context], return_annotation=hints.get("return", inspect.Signature.empty)
    )
    call.__annotations__ = {**{p.name: p.annotation for p in params}, "ctx": Context}
    if "return" in hints:
        call.__annotations__["return"] = hints["return"]
    TOOLS.append(call)
    return call  # type: ignore[return-value]


def tool_error(err: Exception) -> ToolError:
    """``err`` as the REST API would word it."""
    if isinstance(err, exceptions.Throttled):
        return ToolError(throttled_message(err.wait))
    if isinstance(err, NotFound | Http404):
        return ToolError(str(err) or "Not found.")
    if isinstance(err, ValidationError):
        return ToolError(f"Invalid arguments: {_worded(err.detail)}")
    if isinstance(err, DjangoValidationError):
        detail = err.message_dict if hasattr(err, "error_dict") else {"": err.messages}
        return ToolError(f"Invalid arguments: {_worded(detail)}")
    if isinstance(err, exceptions.APIException):
        return ToolError(str(err.detail))
    if (failure := database_failure(err, None)) is not None:
        logger.warning("MCP tool failed: %s (%s: %s)", failure.log.lower(), type(err).__name__, err)
        return ToolError(failure.detail)
    logger.exception("MCP tool failed")
    return ToolError("The server had an error while running this tool.")


def retry_seconds(wait: float | None) -> int:
    """Whole seconds to wait before trying again, at least one (a throttle's wait may be a fraction, or unknown)."""
    return max(1, math.ceil(wait or 0))


def throttled_message(wait: float | None) -> str:
    """A refusal at the per-user rate, naming the rate and when to try again."""
    retry = f"; try again in {retry_seconds(wait)} seconds" if wait is not None else ""
    return (
        f"Too many requests: this account may make {settings.API_THROTTLE_USER} "
        f"(API_THROTTLE_USER, tool calls and REST API requests together){retry}."
    )


def _worded(detail: Any) -> str:
    if isinstance(detail, dict):
        return "; ".join(
            f"{field}: {_worded(value)}" if field else _worded(value) for field, value in detail.items()
        )
    if isinstance(detail, list):
        return " ".join(_worded(item) for item in detail)
    return str(detail)

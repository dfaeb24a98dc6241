"""Errors in OpenAI's shape: ``{"error": {"message", "type", "param", "code"}}``.

The status codes are OpenAI's, so the official SDKs raise their typed
exceptions (400 ``BadRequestError``, 401 ``AuthenticationError``, 404
``NotFoundError``, 429 ``RateLimitError``, 5xx ``InternalServerError``).
"""

from __future__ import annotations

from typing import Any

INVALID_REQUEST = "invalid_request_error"
SERVER_ERROR = "server_error"


class OpenAIError(Exception):
    """An answer in OpenAI's error shape; views turn it into a response."""

    def __init__(
        self,
        message: str,
        *,
        status: int = 400,
        param: str | None = None,
        code: str | None = None,
        type: str = INVALID_REQUEST,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.param = param
        self.code = code
        self.type = type

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def unsupported(
    param: str, what: str | None = None, *, endpoint: str = "/v1/chat/completions"
) -> OpenAIError:
    return OpenAIError(
        f"Nexus does not support {what or param!r} on {endpoint}.",
        param=param,
        code="unsupported_parameter",
    )


def invalid(param: str, message: str) -> OpenAIError:
    return OpenAIError(message, param=param, code="invalid_value")

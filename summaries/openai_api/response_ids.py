"""Response ids that name their session, so ``previous_response_id`` needs no table.

A stored response's id carries its session's uuid, a random part and an
HMAC of both under ``SECRET_KEY``: it resolves to that session without a
query, and an id Nexus did not issue resolves to nothing. Who may continue
it is then decided as for any named session. A ``store: false`` response
gets an id of the same shape that resolves to nothing, as OpenAI's do.
"""

from __future__ import annotations

import re
import secrets
import uuid

from django.utils.crypto import constant_time_compare, salted_hmac

PREFIX = "resp_"
SALT = "nexus.openai.response_id"
NONCE_HEX, MAC_HEX = 16, 24
PATTERN = re.compile(
    rf"{PREFIX}(?P<session>[0-9a-f]{{32}})(?P<nonce>[0-9a-f]{{{NONCE_HEX}}})(?P<mac>[0-9a-f]+)"
)


def _mac(body: str) -> str:
    return salted_hmac(SALT, body, algorithm="sha256").hexdigest()[:MAC_HEX]


def response_id(session_uuid: uuid.UUID | None) -> str:
    """A new id: one that resolves to ``session_uuid``, or (``None``) to nothing."""
    if session_uuid is None:
        return PREFIX + secrets.token_hex((32 + NONCE_HEX + MAC_HEX) // 2)
    body = session_uuid.hex + secrets.token_hex(NONCE_HEX // 2)
    return PREFIX + body + _mac(body)


def session_of(value: str) -> uuid.UUID | None:
    """The session an id Nexus issued names; ``None`` for any other string."""
    match = PATTERN.fullmatch(value)
    if match is None:
        return None
    body = match["session"] + match["nonce"]
    if not constant_time_compare(match["mac"], _mac(body)):
        return None
    return uuid.UUID(match["session"])

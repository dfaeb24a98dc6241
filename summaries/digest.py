"""The extractive digest: a few questions and answer sentences quoted as they were.

It needs no model: topics are the first 100 characters of up to five user
questions, key points the first two sentences (cut at 100 characters) of up
to three responses. Used for episodes no summary covers yet, and as the
summary text of the ``offline`` inference backend.
"""

from __future__ import annotations

from collections.abc import Iterable

FALLBACK = "Earlier conversation about various topics."


def extractive_digest(exchanges: Iterable[tuple[str, str]]) -> str:
    """Digest of ``(user_input, response)`` pairs, oldest first; empty input gives ''."""
    exchanges = list(exchanges)
    if not exchanges:
        return ""
    topics: list[str] = []
    key_points: list[str] = []
    for user_input, response in exchanges:
        if user_input:
            topics.append(user_input[:100])
        if response:
            sentences = response.split(".")[:2]
            key_points.append(". ".join(sentences).strip()[:100])
    lines: list[str] = []
    if topics:
        lines.append(f"Topics discussed: {', '.join(topics[:5])}")
    if key_points:
        lines.append(f"Key points: {'. '.join(key_points[:3])}")
    return "\n".join(lines) if lines else FALLBACK

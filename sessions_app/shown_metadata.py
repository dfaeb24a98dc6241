"""An episode's metadata as readers are shown it.

Some metadata keeps references instead of text (an offline reply's
``offline_memory`` names the exchanges and summary rows it quotes, by id),
so deleting an exchange leaves its text in no other row. The text is put
back when the metadata is read: apps register a renderer here (the
summaries app does for ``offline_memory``), and every reader of an episode's
metadata (API payloads, the chat page, exports) reads
``Episode.shown_metadata``. A reference to what was deleted renders as gone.

``show_metadata(episodes)`` renders a list in one pass (each renderer reads
what all of them reference at once); an episode read alone renders itself
on first access.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["register_renderer", "show_metadata", "shown"]

#: Each takes ``[(session_id, metadata)]`` and answers the shown metadata of
#: each, in order (the same dict when it has nothing to render).
Renderer = Callable[[list[tuple[int, dict[str, Any]]]], list[dict[str, Any]]]
_renderers: dict[str, Renderer] = {}

ATTRIBUTE = "_shown_metadata"


def register_renderer(key: str, renderer: Renderer) -> None:
    """Render metadata that holds ``key`` with ``renderer`` (once per key: a
    second registration replaces the first, so reloading an app is harmless)."""
    _renderers[key] = renderer


def shown(items: list[tuple[int, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The shown metadata of ``(session_id, metadata)`` pairs, in order."""
    result = [metadata for _, metadata in items]
    for key, renderer in _renderers.items():
        picked = [n for n, value in enumerate(result) if isinstance(value, dict) and key in value]
        if not picked:
            continue
        rendered = renderer([(items[n][0], result[n]) for n in picked])
        for n, value in zip(picked, rendered, strict=True):
            result[n] = value
    return result


def show_metadata(episodes: Iterable[Any]) -> list[Any]:
    """Render the metadata of ``episodes`` (Episode rows) at once and keep it
    on each for ``Episode.shown_metadata``; answers them as a list."""
    rows = list(episodes)
    pending = [e for e in rows if not hasattr(e, ATTRIBUTE)]
    if pending:
        for episode, value in zip(
            pending, shown([(e.session_id, e.metadata) for e in pending]), strict=True
        ):
            setattr(episode, ATTRIBUTE, value)
    return rows

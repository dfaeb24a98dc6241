"""The API's JSON renderer: DRF's, safe for every string a client can send.

DRF writes JSON as UTF-8 text, which cannot hold a lone surrogate (``\\ud800``,
valid as a JSON escape in a request). The fields refuse such text before it
is stored, but some of their error messages quote what was sent (a
``ChoiceField``'s '"\\ud800" is not a valid choice.'), and encoding that
reply failed as a server error. Such a reply is written with every
non-ASCII character escaped instead: the same JSON to any parser.
"""

from __future__ import annotations

from typing import Any

from rest_framework import renderers


class JSONRenderer(renderers.JSONRenderer):
    def render(
        self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None
    ) -> bytes:
        try:
            return super().render(data, accepted_media_type, renderer_context)
        except UnicodeEncodeError:
            return _EscapedJSONRenderer().render(data, accepted_media_type, renderer_context)


class _EscapedJSONRenderer(renderers.JSONRenderer):
    ensure_ascii = True

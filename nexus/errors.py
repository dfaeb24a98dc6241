"""Errors shared by every app's domain code.

Services and selectors know nothing of HTTP; a view answers these with the
matching status (the API's exception handler and ``nexus.web`` do it for
every view at once).
"""

from __future__ import annotations


class NotFound(Exception):
    """What the caller named does not exist, or is not theirs to see (a 404 to them)."""

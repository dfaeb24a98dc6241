"""Waiting for the clock, for tests of counts kept in the clock's windows."""

from __future__ import annotations

import time


def start_early_in_a_minute(needed: float = 30.0) -> None:
    """Return when at least ``needed`` seconds of the clock's current minute
    are left, so requests counted in fixed one-minute windows (the API's
    throttles) all fall in the same window however slow the machine."""
    left = 60 - time.time() % 60
    if left < needed:
        time.sleep(left + 0.1)

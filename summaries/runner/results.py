"""What a run returns, and the signal that its lease was taken over."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from summaries.services import StoreOutcome


class RunOutcome(enum.Enum):
    DONE = "done"
    BUSY = "busy"  # another run holds the lease; it was asked to look again
    LOST = "lost"  # the lease was taken over mid-run
    GONE = "gone"  # the session or row no longer exists


@dataclass
class RunResult:
    outcome: RunOutcome
    calls: int = 0
    stored: list[StoreOutcome] = field(default_factory=list)


class _LeaseLost(Exception):
    """The session's lease went to another run while this one computed."""

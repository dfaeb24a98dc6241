"""How an exchange is named where people read it: ``[8 May 2023 · #12]``.

One grammar everywhere (the context's quoted exchanges, replies that show
what memory found, pages): the day in the site's time zone, then the
exchange's position in its session. Positions count from 1 per session and
are never reused, so ``#12`` names the same exchange for as long as it exists.
"""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone

# Month names written out, whatever the process locale (strftime's %B is not).
MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip


def day(moment: datetime) -> str:
    """``8 May 2023``: the day in the site's time zone."""
    local = timezone.localtime(moment)
    return f"{local.day} {MONTHS[local.month - 1]} {local.year}"


def exchanges_label(first: int, last: int) -> str:
    """``Exchanges 5–12``: a range of positions (a summary row's); ``Exchange 5`` for one."""
    return f"Exchange {first}" if first == last else f"Exchanges {first}–{last}"


def episode_label(*, created_at: datetime, position: int) -> str:
    """``[8 May 2023 · #12]``: an exchange's day and its number in its session."""
    return f"[{day(created_at)} · #{position}]"


def lent_episode_label(*, created_at: datetime, title: str, position: int) -> str:
    """``[8 May 2023 · "Trip planning" #12]``: an exchange of another of the
    person's chats, named by that chat's title."""
    name = title.strip() or "Untitled chat"
    return f'[{day(created_at)} · "{name}" #{position}]'

"""Throttles whose rates come from settings at request time.

DRF's own classes read ``DEFAULT_THROTTLE_RATES`` once at import, so a rate
set by the environment or a test's ``override_settings`` would be missed.
"""

from __future__ import annotations

from django.conf import settings
from rest_framework.throttling import AnonRateThrottle, UserRateThrottle


class AnonThrottle(AnonRateThrottle):
    def get_rate(self) -> str | None:
        return settings.API_THROTTLE_ANON or None


class UserThrottle(UserRateThrottle):
    def get_rate(self) -> str | None:
        return settings.API_THROTTLE_USER or None

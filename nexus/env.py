"""Typed readers for settings that come from the environment.

Every reader raises ``ImproperlyConfigured`` naming the variable, so a bad
value stops start-up with a message a person can act on.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import dotenv
from django.core.exceptions import ImproperlyConfigured

T = TypeVar("T")

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _read(name: str, default: T, parse: Callable[[str], T], kind: str) -> T:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        return parse(raw.strip())
    except (TypeError, ValueError) as exc:
        raise ImproperlyConfigured(
            f"Environment variable {name}={raw!r} is not a valid {kind}."
        ) from exc


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_required(name: str) -> str:
    value = os.environ.get(name, "").strip()
    if not value:
        raise ImproperlyConfigured(f"Environment variable {name} must be set.")
    return value


def env_bool(name: str, default: bool = False) -> bool:
    def parse(raw: str) -> bool:
        lowered = raw.lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise ValueError(raw)

    return _read(name, default, parse, "boolean (1/0, true/false, yes/no, on/off)")


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    value = _read(name, default, int, "integer")
    _check_range(name, value, minimum, maximum)
    return value


def env_optional_int(name: str, *, minimum: int | None = None, maximum: int | None = None) -> int | None:
    """An integer, or ``None`` when the variable is unset or empty (an
    optional limit that is off unless set)."""
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return None
    return env_int(name, 0, minimum=minimum, maximum=maximum)


def env_float(
    name: str, default: float, *, minimum: float | None = None, maximum: float | None = None
) -> float:
    value = _read(name, default, float, "number")
    _check_range(name, value, minimum, maximum)
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_pairs(name: str) -> dict[str, str]:
    """``name=value`` items separated by commas (``a=x,b=y``), into a dict;
    ``{}`` when unset or empty. An item without ``=``, with an empty side or
    a name given twice stops start-up naming the variable and the item."""
    pairs: dict[str, str] = {}
    for item in os.environ.get(name, "").split(","):
        if not item.strip():
            continue
        key, sep, value = (part.strip() for part in item.partition("="))
        if not sep or not key or not value or key in pairs:
            reason = "is named twice" if key in pairs else "must be name=value"
            raise ImproperlyConfigured(f"Environment variable {name}: {item.strip()!r} {reason}.")
        pairs[key] = value
    return pairs


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = os.environ.get(name, default).strip().lower()
    if value not in choices:
        raise ImproperlyConfigured(
            f"Environment variable {name}={value!r} must be one of: {', '.join(choices)}."
        )
    return value


def env_url(name: str, default: str, schemes: tuple[str, ...]) -> str:
    """A URL whose scheme is one of ``schemes`` (``""`` when unset and no default)."""
    value = os.environ.get(name, default).strip()
    if value and not any(value.startswith(f"{scheme}://") for scheme in schemes):
        raise ImproperlyConfigured(
            f"Environment variable {name}={value!r} must be a "
            + ", ".join(f"{scheme}://" for scheme in schemes)
            + " URL."
        )
    return value


def _check_range(name: str, value: float, minimum: float | None, maximum: float | None) -> None:
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"Environment variable {name}={value} must be at least {minimum}.")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"Environment variable {name}={value} must be at most {maximum}.")


def env_identifier(name: str, default: str) -> str:
    """A name that goes into SQL as written (e.g. a text search configuration:
    ``english``, ``pg_catalog.simple``): letters, digits and underscores."""
    value = env_str(name, default)
    if not re.fullmatch(r"[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?", value):
        raise ImproperlyConfigured(
            f"Environment variable {name}={value!r} must be a name such as english or pg_catalog.simple."
        )
    return value


def load_env_file(default: Path) -> Path | None:
    """Read ``NEXUS_ENV_FILE`` (``default`` when unset, none when empty) into
    the environment; variables already set win. The embedded default keeps
    its settings there (``bin/run`` writes it), so every ``manage.py``
    command sees what the server sees. Returns the file read, if any."""
    raw = os.environ.get("NEXUS_ENV_FILE")
    path = default if raw is None else Path(raw) if raw.strip() else None
    if path is None or not path.is_file():
        if raw and raw.strip():
            raise ImproperlyConfigured(f"Environment variable NEXUS_ENV_FILE={raw!r} names no file.")
        return None
    dotenv.load_dotenv(path, override=False)
    return path


def file_secret(path: str) -> str:
    """A secret kept in a file of its own (``bin/run`` and ``bin/stack`` write
    ``var/secret_key``); "" when ``path`` is empty or the file missing or empty."""
    if not path.strip():
        return ""
    try:
        return Path(path).read_text().strip()
    except FileNotFoundError:
        return ""

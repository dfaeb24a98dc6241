"""Log formatting: one JSON object per line, and user text kept out of logs.

``JsonFormatter`` writes ``time``, ``level``, ``logger``, ``message`` and every
field passed with ``extra=`` (for example the summarization record's
``session``, ``episode_range``, ``prompt_tokens``, ``completion_tokens``,
``duration_ms``, ``outcome``, ``error``), plus ``exc_info`` as text when an
exception is attached. Values JSON cannot encode are written with ``str()``.

``ContentFilter`` blanks fields that carry what people wrote (messages,
replies, prompts, summaries) unless ``settings.LOG_CONTENT`` is on, so a
logging call that passes them by mistake still leaks nothing.
``RequestLineFilter`` does the same for the query string of the development
server's request lines (``?q=`` of a search, ``?question=`` of a context).

Every line is one record: the plain format writes a message's control
characters escaped (``\\n``), as the JSON format does, so a path holding
``%0a`` cannot start a forged line.
"""

from __future__ import annotations

import json
import logging
import re
from datetime import UTC, datetime
from typing import Any

# Attributes every LogRecord has; anything else on a record came from ``extra``.
_RECORD_ATTRS = frozenset(vars(logging.LogRecord("", logging.INFO, "", 0, "", None, None)).keys()) | {
    "message",
    "asctime",
    "taskName",
}

# Field names that hold user text.
CONTENT_FIELDS = frozenset(
    {
        "user_input",
        "response",
        "content",
        "prompt",
        "question",
        "reply",
        "answer",
        "messages",
        "text",
        "completion",
    }
)
REDACTED = "[redacted]"


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def escape_controls(text: str) -> str:
    """``text`` with its control characters as escapes (a newline as ``\\n``): one line, whatever it holds."""
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


class PlainFormatter(logging.Formatter):
    """``asctime level logger message``; the message on one line (a traceback follows on its own lines)."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's name
        record.message = escape_controls(record.message)
        return super().formatMessage(record)


class RequestLineFilter(logging.Filter):
    """The development server's request lines (``django.server``) without
    their query string unless LOG_CONTENT is on: it carries what people
    wrote (a search's ``q``, a context's ``question``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if _log_content() or not isinstance(args, tuple) or not args or not isinstance(args[0], str):
            return True
        method, _, rest = args[0].partition(" ")
        target, space, version = rest.rpartition(" ") if " " in rest else (rest, "", "")
        if "?" in target:
            target = target.split("?", 1)[0] + "?[redacted]"
            record.args = (f"{method} {target}{space}{version}", *args[1:])
        return True


def record_extras(record: logging.LogRecord) -> dict[str, Any]:
    """The fields a logging call added with ``extra=``."""
    return {k: v for k, v in vars(record).items() if k not in _RECORD_ATTRS and not k.startswith("_")}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, tz=UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record_extras(record).items():
            # The four fixed keys win; an extra with the same name is kept under a prefix.
            payload[f"extra_{key}" if key in payload else key] = value
        if record.name == "gunicorn.access" and isinstance(record.args, dict):
            # gunicorn's access record carries its atoms as args: keep the useful ones as fields.
            atoms = record.args
            payload.update(
                method=atoms.get("m"),
                path=atoms.get("U"),
                status=atoms.get("s"),
                duration_ms=atoms.get("M"),
                remote_addr=atoms.get("h"),
            )
        if record.exc_info:
            payload["exc_info"] = self.formatException(record.exc_info)
        if record.stack_info:
            payload["stack_info"] = self.formatStack(record.stack_info)
        # ensure_ascii keeps the line a single line whatever the text holds;
        # json.dumps never writes a raw newline.
        return json.dumps(payload, default=str, ensure_ascii=True)


class ContentFilter(logging.Filter):
    """Blank user-text fields in ``extra`` unless LOG_CONTENT is on."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not _log_content():
            for key in CONTENT_FIELDS.intersection(vars(record)):
                setattr(record, key, REDACTED)
        return True


def _log_content() -> bool:
    try:
        from django.conf import settings

        return bool(getattr(settings, "LOG_CONTENT", False))
    except Exception:  # noqa: BLE001 - settings not configured (a bare script): keep text out
        return False


def logging_settings(*, log_format: str, level: str) -> dict[str, Any]:
    """``settings.LOGGING``: one console handler in ``log_format`` (``plain`` or
    ``json``), with user text blanked by ``ContentFilter``; the root logger at ``level``."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {
            "content": {"()": "nexus.logging.ContentFilter"},
            "request_line": {"()": "nexus.logging.RequestLineFilter"},
        },
        "formatters": {
            "plain": {
                "()": "nexus.logging.PlainFormatter",
                "format": "%(asctime)s %(levelname)s %(name)s %(message)s",
            },
            "json": {"()": "nexus.logging.JsonFormatter"},
        },
        "handlers": {
            "console": {"class": "logging.StreamHandler", "formatter": log_format, "filters": ["content"]}
        },
        # runserver's request lines (Django's own handler would write them
        # whole, query string included): through the console like the rest.
        "loggers": {
            "django.server": {
                "handlers": ["console"], "level": "INFO", "propagate": False, "filters": ["request_line"],
            },
        },
        "root": {"handlers": ["console"], "level": level.upper()},
    }

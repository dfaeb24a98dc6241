"""What gunicorn writes itself, before or besides Django: its error answers
and its access-log lines (``nexus/gunicorn.conf.py`` names both classes).

- ``JsonErrorWorker``: the answers gunicorn sends for a request it cannot
  hand to Django (a request line over ``limit_request_line``: 414; headers
  too large: 431; a malformed request: 400) are JSON, not its HTML page.
  The path is unknown then (the request line was not read whole), so the
  body carries both API shapes: ``detail`` as ``/api/`` answers and
  ``error`` as ``/v1/`` (OpenAI's SDKs) reads it.
- ``AccessLogger``: every value of an access line has its control characters
  escaped, so a path holding ``%0a`` (decoded into a newline in ``%(U)s``)
  cannot start a forged line.
"""

from __future__ import annotations

import json
from typing import Any

from gunicorn import util
from gunicorn.glogging import Logger
from gunicorn.workers.gthread import ThreadWorker

from nexus.logging import escape_controls

#: What the 414 tells a client to do instead.
LONG_REQUEST_LINE_HINT = (
    "The request line is too long. Send a long search as POST /api/search/ (or "
    "/api/sessions/{uuid}/search/) with a JSON body {\"q\": ..., \"limit\": ...}."
)


def json_error_body(status: int, reason: str, message: str) -> bytes:
    detail = LONG_REQUEST_LINE_HINT if status == 414 else (message or reason)
    code = reason.lower().replace(" ", "_")
    kind = "server_error" if status >= 500 else "invalid_request_error"
    return json.dumps(
        {"detail": detail, "error": {"message": detail, "type": kind, "param": None, "code": code}}
    ).encode()


def write_json_error(sock: Any, status_int: int, reason: str, mesg: str) -> None:
    """``gunicorn.util.write_error`` with a JSON body (same status line and headers)."""
    body = json_error_body(status_int, reason, mesg)
    head = (
        f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    util.write_nonblock(sock, head.encode("latin1") + body)


class JsonErrorWorker(ThreadWorker):
    """The gthread worker, answering its own errors in JSON.

    gunicorn's ``Worker.handle_error`` builds the status and then calls
    ``gunicorn.util.write_error``; this worker's process swaps that one
    function for ``write_json_error`` as it starts (nothing else calls it).
    """

    def init_process(self) -> None:
        util.write_error = write_json_error
        super().init_process()


class AccessLogger(Logger):
    """gunicorn's logger with control characters escaped in every access-line value."""

    def atoms(self, resp: Any, req: Any, environ: dict, request_time: Any) -> dict:
        atoms = super().atoms(resp, req, environ, request_time)
        return {
            key: escape_controls(value) if isinstance(value, str) else value for key, value in atoms.items()
        }

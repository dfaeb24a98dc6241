"""Whether the client of a request is still connected, asked just before a write.

A client that gave up (its timeout fired, the person closed the page) will
never read the answer; a write made for it anyway is a duplicate in waiting,
since it will most likely send the request again. A streamed answer finds
out when a write to the socket fails; a plain one is written in one go at
the end, so the only moment to ask is before the write commits.

What can be known: the socket says the peer closed or reset the connection
(``poll`` reports a hang-up, or a read that would not block finds its end).
What cannot: a client that is gone without a word (its machine lost power,
a proxy in front keeps the connection open): that looks connected. And the
client may leave after the question was asked: the window is the commit and
the writing of the answer, milliseconds. A retry with an ``Idempotency-Key``
is the sure way; this only avoids the common case.

The socket is found where the servers Nexus runs on put it: gunicorn's
``gunicorn.socket``, and the request body stream of Django's own server
(``runserver``, the embedded default, and the test suite's live server).
Elsewhere (the test client, an unknown server) the answer is "connected".
"""

from __future__ import annotations

import select
import socket
from typing import Any

#: What a peer that closed or reset its connection makes ``poll`` report.
HANG_UP = select.POLLHUP | select.POLLERR | select.POLLNVAL | getattr(select, "POLLRDHUP", 0)


class ClientGone(Exception):
    """The client closed its connection before the answer was sent: store nothing."""


def request_socket_fd(request: Any) -> int | None:
    """The file descriptor of the client's connection, if the server shows it."""
    meta = getattr(request, "META", {})
    sock = meta.get("gunicorn.socket")
    if sock is not None:
        return _fileno(sock)
    # Django's server reads the body through a LimitedStream over the socket's
    # file, which keeps only that file's bound read method: its ``__self__``.
    body = meta.get("wsgi.input")
    read = getattr(body, "_read", None)
    stream = getattr(read, "__self__", None)
    return _fileno(stream) if stream is not None else None


def _fileno(obj: Any) -> int | None:
    try:
        fd = obj.fileno()
    except (AttributeError, OSError, ValueError):
        return None
    return fd if isinstance(fd, int) and fd >= 0 else None


def client_gone(request: Any) -> bool:
    """Whether the client of ``request`` has closed its connection (see the module docstring)."""
    fd = request_socket_fd(request)
    if fd is None:
        return False
    poller = select.poll()
    poller.register(fd, select.POLLIN | HANG_UP)
    try:
        ready = poller.poll(0)
    except OSError:
        return True
    if not ready:
        return False
    mask = ready[0][1]
    if mask & HANG_UP:
        return True
    # Readable: a request sent after this one, or the end of the stream.
    try:
        with socket.fromfd(fd, socket.AF_INET, socket.SOCK_STREAM) as peek:
            return peek.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True

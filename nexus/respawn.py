"""Run a command, and run it again whenever it exits, until told to stop.

    python -m nexus.respawn celery -A nexus worker ...

The Procfile runs the Celery worker and beat through this. honcho (``bin/stack``)
stops every process as soon as one exits, so a worker that died for good (the
broker dropped mid-delivery, a crash) would take the web server down with it;
under this loop it is started again instead, after a pause that doubles from
``FIRST_PAUSE`` to ``LONGEST_PAUSE`` while it keeps dying early and starts
over once it has run for ``STEADY_SECONDS``. A platform that restarts
processes itself loses nothing by it.

SIGTERM or SIGINT (honcho's stop, Ctrl+C) ends the loop: the signal is passed
on to the command once, and this exits with the command's status once it has
stopped. The command runs in a session of its own, so a signal sent to this
process's group reaches it only through here, once.

Standard library only: no Django here.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from types import FrameType

FIRST_PAUSE = 1.0
LONGEST_PAUSE = 30.0
STEADY_SECONDS = 60.0


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m nexus.respawn COMMAND [ARGS...]", file=sys.stderr)
        return 2
    # Plain values, not a threading.Event: a signal handler that took the
    # Event's lock while the main thread held it would never return.
    stopping = [False]
    child: list[subprocess.Popen[bytes]] = []

    def stop(signum: int, frame: FrameType | None) -> None:
        if stopping[0]:
            return
        stopping[0] = True
        if child and child[0].returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child[0].pid, signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    pause = FIRST_PAUSE
    while True:
        started = time.monotonic()
        process = subprocess.Popen(argv, start_new_session=True)
        child[:] = [process]
        if stopping[0]:  # a signal that came while it was being started
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGTERM)
        status = process.wait()
        if stopping[0]:
            return status
        ran = time.monotonic() - started
        pause = FIRST_PAUSE if ran >= STEADY_SECONDS else pause
        print(
            f"respawn: {argv[0]} exited with status {status} after {ran:.0f} s; "
            f"starting it again in {pause:g} s",
            file=sys.stderr,
            flush=True,
        )
        resume = time.monotonic() + pause
        while not stopping[0] and time.monotonic() < resume:
            time.sleep(0.05)
        if stopping[0]:
            return status
        pause = min(pause * 2, LONGEST_PAUSE)

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

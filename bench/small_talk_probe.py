"""Does the small-talk detector know small talk it was not written for?

``sessions_app.semantic.small_talk`` decides that a message needs no memory
(its context is the recent window alone). Its phrases and threshold were
chosen beside the recall benchmark's own five messages; this probe asks it
about messages written apart from it (``bench/data/small_talk_probe.json``):
small talk in other words ("appreciate it!", "brb", "ttyl"), short real
questions that do need memory ("which port did we pick?", "and the
deadline?") and short requests put without a question mark ("remind me of
the port"). Prints how many of each it calls small talk, and the messages
it gets wrong.

    .venv/bin/python bench/small_talk_probe.py [--verbose]

Figures: bench/README.md. No database: the encoder alone.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.support import setup_django_offline  # noqa: E402

setup_django_offline()

from bench.datafiles import load  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true", help="print every message with its verdict")
    args = parser.parse_args()

    from sessions_app.semantic.encoder import encoder
    from sessions_app.semantic.small_talk import is_small_talk

    probe = load("small_talk_probe")
    for group, wanted in (("small_talk", True), ("questions", False), ("requests", False)):
        messages = probe[group]
        vectors = encoder().encode(messages)
        verdicts = [is_small_talk(message, vector) for message, vector in zip(messages, vectors, strict=True)]
        caught = sum(verdicts)
        print(f"{group.replace('_', ' ')} called small talk: {caught} of {len(messages)}")
        for message, verdict in zip(messages, verdicts, strict=True):
            if args.verbose or verdict != wanted:
                print(f"  {'small talk' if verdict else 'needs memory':12s} {message}")


if __name__ == "__main__":
    main()

"""The benchmarks' data files: word lists and templates kept as JSON under
bench/data/, so that the modules that compose text from them hold only code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data"


def load(name: str) -> Any:
    """The contents of ``bench/data/{name}.json``."""
    return json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))

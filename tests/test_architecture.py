"""The shape of the house: layers that only point down, no private names
borrowed across modules, modules small enough to read in one sitting.

The layers themselves are the import-linter contracts in pyproject.toml;
this runs them, so the suite fails on the first import that points up.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
APPS = ("nexus", "sessions_app", "notes", "summaries")
MAX_LINES = 350


def _project_modules() -> dict[Path, str]:
    """Every Python file of the three top-level packages, with its dotted name."""
    found: dict[Path, str] = {}
    for package in APPS:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[path] = ".".join(parts)
    return found


def _is_project_module(name: str) -> bool:
    return name.split(".", 1)[0] in APPS


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def test_import_contracts_hold() -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    completed = subprocess.run(
        [str(lint_imports), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr


def _private_names_used_from_other_modules(path: Path, module: str, modules: set[str]) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    imported_modules: set[str] = set()
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = node.module or ""
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join([*base, source] if source else base)
            if not _is_project_module(source):
                continue
            for alias in node.names:
                if _is_private(alias.name):
                    found.append(f"{module}:{node.lineno} imports {alias.name} from {source}")
                elif f"{source}.{alias.name}" in modules:
                    imported_modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _is_project_module(alias.name):
                    imported_modules.add(alias.asname or alias.name.split(".", 1)[0])
    for node in ast.walk(tree):
        # `calls._client(...)`: a private name reached through an imported module.
        if (
            isinstance(node, ast.Attribute)
            and _is_private(node.attr)
            and isinstance(node.value, ast.Name)
            and node.value.id in imported_modules
        ):
            found.append(f"{module}:{node.lineno} uses {node.value.id}.{node.attr}")
    return found


def test_no_module_borrows_another_modules_private_names() -> None:
    project = _project_modules()
    modules = set(project.values())
    offences = [
        offence
        for path, module in project.items()
        for offence in _private_names_used_from_other_modules(path, module, modules)
    ]
    assert offences == []


def test_the_scan_sees_a_borrowed_private_name(tmp_path: Path) -> None:
    # The check above must be able to fail.
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from summaries.runner.calls import _call\nfrom summaries.runner import calls\ncalls._client(None)\n"
    )
    offences = _private_names_used_from_other_modules(
        sample, "summaries.sample", {"summaries.runner", "summaries.runner.calls"}
    )
    assert len(offences) == 2


@pytest.mark.parametrize("package", APPS)
def test_no_module_is_longer_than_one_sitting(package: str) -> None:
    too_long = {
        str(path.relative_to(ROOT)): length
        for path in sorted((ROOT / package).rglob("*.py"))
        if (length := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert too_long == {}

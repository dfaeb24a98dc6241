"""Every command the README gives works as written on a fresh checkout once
``bin/run`` has run: no variable to guess. A copy of the checkout's files
(what git would clone: no ``.env``, no ``var/``, no database) gets ``bin/run``,
which is stopped once it serves; then each ``manage.py`` command the README
names runs in its non-interactive form, from a shell that set nothing."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.process_support import PROJECT_ROOT, env_without, free_port, start_logged, stop_process, wait_until

VENV = Path(sys.prefix)
README = (PROJECT_ROOT / "README.md").read_text()

TRANSCRIPT = [
    {"user_input": f"Day {n}: how often should I water the tomato seedlings?", "response": "Every other day. " * 12}
    for n in range(12)
]


def fresh_checkout(target: Path) -> Path:
    """The checkout's files as a clone would have them, with this virtualenv."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=PROJECT_ROOT,
        check=True,
        capture_output=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = PROJECT_ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    (target / ".venv").symlink_to(VENV)
    return target


def clean_env() -> dict[str, str]:
    """A shell that set none of Nexus's variables."""
    return env_without(
        "DJANGO_", "NEXUS_", "DATABASE_", "CELERY_", "INFERENCE_", "SUMMARY_", "CONTEXT_", "CACHE_", "PYTEST_"
    )


@pytest.fixture(scope="module")
def after_bin_run(tmp_path_factory) -> Iterator[Path]:
    checkout = fresh_checkout(tmp_path_factory.mktemp("clone"))
    port = free_port()
    log = checkout / "bin-run.log"
    process = start_logged(["bin/run"], log_path=log, env={**clean_env(), "PORT": str(port)}, cwd=checkout)
    try:
        wait_until(
            lambda: httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200,
            timeout=180,
            interval=0.5,
            message="bin/run to serve",
            retry_on=(httpx.HTTPError,),
        )
    finally:
        stop_process(process, group=True)
    output = log.read_text()
    assert "Demo login: username=demo password=nexus-demo" in output, output
    # One line per step while it works.
    assert "==> Migrating the database" in output and "==> Serving http://127.0.0.1" in output, output
    yield checkout


def manage(checkout: Path, *args: str, **extra_env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [".venv/bin/python", "manage.py", *args],
        cwd=checkout,
        env={**clean_env(), **extra_env},
        capture_output=True,
        stdin=subprocess.DEVNULL,  # a command that reads its input (mcp over stdio) ends at its end
        text=True,
        timeout=180,
    )


def test_bin_run_keeps_its_settings_out_of_git(after_bin_run):
    assert (after_bin_run / ".env").read_text().count("DJANGO_DEBUG=1") == 1
    assert len((after_bin_run / "var" / "secret_key").read_text().strip()) >= 50
    ignored = subprocess.run(
        ["git", "check-ignore", ".env", "var/secret_key", "db.sqlite3", "db.sqlite3-wal", "db.sqlite3-shm"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert ignored == [".env", "var/secret_key", "db.sqlite3", "db.sqlite3-wal", "db.sqlite3-shm"]


def test_every_manage_command_in_the_readme_works_as_written(after_bin_run, tmp_path):
    checkout = after_bin_run
    transcript = tmp_path / "garden.jsonl"
    transcript.write_text("".join(json.dumps(line) + "\n" for line in TRANSCRIPT))
    ran: list[str] = []

    def ok(*args: str, **extra_env: str) -> str:
        done = manage(checkout, *args, **extra_env)
        assert done.returncode == 0, f"manage.py {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
        ran.append(args[0])
        return done.stdout

    ok("createsuperuser", "--noinput", "--username", "admin", "--email", "admin@example.com",
       DJANGO_SUPERUSER_PASSWORD="a-long-admin-password")  # fmt: skip
    ok("migrate")
    ok("collectstatic", "--noinput")
    ok("import_transcript", str(transcript), "--owner", "demo", "--title", "Garden")
    ok("export_user", "demo", "-o", str(tmp_path / "demo.jsonl"))
    header = json.loads((tmp_path / "demo.jsonl").read_text().splitlines()[0])
    ok("export_session", header["id"], "--output", str(tmp_path / "one.jsonl"))
    ok("summarize_session", header["id"])
    ok("summarize_pending")
    ok("embed_episodes", "--session", header["id"])
    assert "Indexed" in ok("index_summaries")
    ok("purge_expired")
    key = ok(
        "shell", "-v0", "-c",
        "from django.contrib.auth import get_user_model; from nexus.api.keys.services import key_create; "
        "print(key_create(user=get_user_model().objects.get(username='demo'), name='readme')[1])",
    ).strip()  # fmt: skip
    assert "as demo's key" in manage(checkout, "mcp", NEXUS_API_KEY=key).stderr
    ok("mcp", NEXUS_API_KEY=key)  # over stdio, until its input ends
    ok("erase_user", "demo")

    named = set(re.findall(r"manage\.py ([a-z_]+)", README))
    assert named <= set(ran), f"README commands not tried here: {sorted(named - set(ran))}"

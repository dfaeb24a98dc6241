"""The demo login: only the embedded, debugging ``bin/run`` makes one, and
it is an ordinary user; ``bin/stack`` (production-shaped) makes none and
says how to create an admin."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parent.parent


def test_refuses_to_run_with_debug_off(settings):
    settings.DEBUG = False
    with pytest.raises(CommandError, match="createsuperuser"):
        call_command("ensure_demo_user")
    assert not get_user_model().objects.filter(username="demo").exists()


def test_makes_an_ordinary_user_while_debugging(settings, capsys):
    settings.DEBUG = True
    get_user_model().objects.create_user("demo", password="old", is_staff=True, is_superuser=True)
    call_command("ensure_demo_user")
    demo = get_user_model().objects.get(username="demo")
    assert not demo.is_staff and not demo.is_superuser
    assert demo.check_password("nexus-demo")
    assert "Demo login: username=demo password=nexus-demo" in capsys.readouterr().out


def commands(script: str) -> list[str]:
    lines = (ROOT / "bin" / script).read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]


def test_bin_stack_makes_no_demo_login_and_says_how_to_make_an_admin():
    stack = commands("stack")
    assert not any("ensure_demo_user" in line or "createsuperuser --noinput" in line for line in stack)
    assert any(line.startswith("echo") and "manage.py createsuperuser" in line for line in stack)


def test_bin_run_makes_the_demo_login_only_while_debugging():
    run = commands("run")
    at = next(i for i, line in enumerate(run) if "ensure_demo_user" in line)
    assert run[at - 1].startswith("if") and "DJANGO_DEBUG" in run[at - 1]

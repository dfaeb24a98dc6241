"""Browser fixtures: Debian's Chromium driven by Playwright against ``live_server``.

The browser is skipped where Chromium is missing, except when
NEXUS_REQUIRE_SERVICES=1 (CI), where that is a failure: ``.ci/run`` installs it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from tests.process_support import require_or_skip

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
PASSWORD = "correct-horse-battery"  # tests.factories.UserFactory's


# Per module, not per session: Playwright's event loop stays in this thread
# while the browser is open, and other test modules should not run inside it.
@pytest.fixture(scope="module")
def browser() -> Iterator:
    if not os.path.exists(CHROMIUM):
        require_or_skip(f"{CHROMIUM} is missing (apt-get install chromium; .ci/run installs it)")
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop in this thread; Django would
    # otherwise refuse the ORM calls the tests make between browser steps.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            yield launched
            launched.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


class PageRecorder:
    """What a page did that a test may want to assert on."""

    def __init__(self) -> None:
        self.dialogs: list[str] = []
        self.console_errors: list[str] = []
        self.page_errors: list[str] = []


@pytest.fixture
def open_page(browser, live_server):
    """``open_page(viewport=..., bypass_csp=...)`` -> (page, recorder)."""
    contexts = []

    def _open(viewport: dict | None = None, bypass_csp: bool = False):
        context = browser.new_context(viewport=viewport or DESKTOP, bypass_csp=bypass_csp)
        context.set_default_timeout(15_000)
        contexts.append(context)
        page = context.new_page()
        recorder = PageRecorder()

        def on_dialog(dialog) -> None:
            recorder.dialogs.append(dialog.message)
            dialog.dismiss()

        page.on("dialog", on_dialog)
        page.on("pageerror", lambda exc: recorder.page_errors.append(str(exc)))
        page.on(
            "console", lambda msg: recorder.console_errors.append(msg.text) if msg.type == "error" else None
        )
        return page, recorder

    yield _open
    for context in contexts:
        context.close()


def sign_in(page, live_server, username: str, password: str = PASSWORD) -> None:
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{live_server.url}/")


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    path = Path(settings.BASE_DIR) / "test-artifacts"
    path.mkdir(exist_ok=True)
    return path

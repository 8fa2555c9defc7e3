"""Debian's Chromium through Playwright, for the browser tests (``-m browser``): one way to
launch it, used by the ``browser`` and ``page`` fixtures of tests/conftest.py.

Without /usr/bin/chromium the browser tests are skipped with the reason, except in CI
(``CI=true``), where a missing browser fails them: CI must not pass by skipping them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = Path(__file__).resolve().parents[1] / "artifacts" / "screenshots"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
VIEWPORT = {"width": 1280, "height": 900}


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def require_chromium(chromium: Path = CHROMIUM) -> None:
    """Skip (or, in CI, fail) the calling test when Chromium is not installed."""
    if chromium.exists():
        return
    reason = f"Debian's Chromium ({chromium}) is not installed"
    if in_ci():
        pytest.fail(f"{reason}; CI must run the browser tests", pytrace=False)
    pytest.skip(reason)


@contextmanager
def launch_chromium() -> Iterator[Any]:
    """A headless Chromium. Playwright's sync API keeps an event loop in this thread; the ORM
    calls tests make between page actions are still synchronous, so Django is told they are
    safe while the browser runs."""
    require_chromium()
    from playwright.sync_api import sync_playwright

    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
            )
            try:
                yield browser
            finally:
                browser.close()
    finally:
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)


@contextmanager
def new_page(browser: Any) -> Iterator[Any]:
    """A page in a fresh context (own cookies), 1280 x 900, 10 s default timeout."""
    context = browser.new_context(viewport=VIEWPORT)
    try:
        page = context.new_page()
        page.set_default_timeout(10_000)
        yield page
    finally:
        context.close()


def screenshot(page: Any, name: str) -> None:
    """Save the whole page to artifacts/screenshots/<name>.png (gitignored)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def answer_dialogs(page: Any, accept: bool) -> list[str]:
    """Answer the page's next confirm dialog (accept or dismiss); the list gets its question."""
    asked: list[str] = []

    def handle(dialog: Any) -> None:
        asked.append(dialog.message)
        dialog.accept() if accept else dialog.dismiss()

    page.once("dialog", handle)
    return asked

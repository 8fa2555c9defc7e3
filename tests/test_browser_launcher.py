"""The browser tests' launcher: without Chromium they skip with the reason, but in CI a missing
browser fails them (CI must not turn green by skipping them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser import require_chromium

MISSING = Path("/nonexistent/chromium")


def test_missing_chromium_skips_the_browser_tests_outside_ci(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="not installed"):
        require_chromium(MISSING)


def test_missing_chromium_fails_the_browser_tests_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must run the browser tests"):
        require_chromium(MISSING)


def test_an_installed_chromium_is_accepted_in_ci(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CI", "true")
    chromium = tmp_path / "chromium"
    chromium.touch()
    require_chromium(chromium)  # neither skips nor fails

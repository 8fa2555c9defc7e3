"""Server and token from the environment or the config file, which must be private (0600)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuplatform_cli.config import load_settings
from gpuplatform_cli.errors import CliError, Exit
from gpuplatform_cli.main import main
from tests.gpuplatform_cli.conftest import Canned


def write_config(path: Path, mode: int, text: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text or "url: http://file.example/\ntoken: gpp_file_secret\n")
    path.chmod(mode)
    return path


def test_the_config_file_under_xdg_config_home_and_the_environment_winning(
    tmp_path: Path,
) -> None:
    write_config(tmp_path / "gpuplatform" / "config.yaml", 0o600)
    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    settings = load_settings(env)
    assert (settings.url, settings.token) == ("http://file.example", "gpp_file_secret")
    settings = load_settings({**env, "GPUPLATFORM_TOKEN": "gpp_env"})
    assert (settings.url, settings.token) == ("http://file.example", "gpp_env")


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_a_config_file_others_may_read_is_refused(tmp_path: Path, mode: int) -> None:
    path = write_config(tmp_path / "config.yaml", mode)
    with pytest.raises(CliError) as error:
        load_settings({"GPUPLATFORM_CONFIG": str(path)})
    assert error.value.code == Exit.CONFIG
    assert f"others may read it (mode {mode:04o}); run: chmod 600 {path}" in error.value.message


def test_missing_server_or_token_names_both_places(tmp_path: Path) -> None:
    with pytest.raises(CliError) as error:
        load_settings(
            {"GPUPLATFORM_CONFIG": str(tmp_path / "none.yaml"), "GPUPLATFORM_URL": "http://x"}
        )
    assert error.value.code == Exit.CONFIG
    assert "Missing an API token (GPUPLATFORM_TOKEN or 'token' in" in error.value.message
    assert "the server" not in error.value.message


def test_unknown_keys_and_bad_urls_are_refused(tmp_path: Path) -> None:
    path = write_config(tmp_path / "c.yaml", 0o600, "url: http://x\ntokn: gpp\n")
    with pytest.raises(CliError, match="unknown key tokn"):
        load_settings({"GPUPLATFORM_CONFIG": str(path)})
    with pytest.raises(CliError, match="should start with https://"):
        load_settings({"GPUPLATFORM_URL": "gpu.example.org", "GPUPLATFORM_TOKEN": "gpp"})


def test_the_token_from_a_private_file_is_sent(
    canned: Canned, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    canned.body = {"count": 0, "results": []}
    path = write_config(tmp_path / "c.yaml", 0o600, f"url: {canned.url}\ntoken: gpp_t\n")
    assert main(["list"], environ={"GPUPLATFORM_CONFIG": str(path)}) == 0
    assert capsys.readouterr().out == "No jobs.\n"
    assert canned.requests == ["/api/v1/jobs/?page_size=50&ordering=-submitted_at&mine=true"]
    assert canned.tokens == ["Bearer gpp_t"]

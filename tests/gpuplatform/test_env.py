"""Settings come from environment variables through typed helpers with clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuplatform.env import (
    EnvError,
    env_bool,
    env_database,
    env_int,
    env_list,
    env_str,
    parse_database_url,
)


def test_env_str_returns_default_when_unset_and_strips_whitespace() -> None:
    assert env_str("NAME", "fallback", {}) == "fallback"
    assert env_str("NAME", "fallback", {"NAME": "  value \n"}) == "value"


@pytest.mark.parametrize("raw", ["1", "true", "TRUE", "yes", "on", " True "])
def test_env_bool_accepts_true_words(raw: str) -> None:
    assert env_bool("DEBUG", False, {"DEBUG": raw}) is True


@pytest.mark.parametrize("raw", ["0", "false", "No", "off", ""])
def test_env_bool_accepts_false_words(raw: str) -> None:
    assert env_bool("DEBUG", True, {"DEBUG": raw}) is False


def test_env_bool_uses_default_when_unset() -> None:
    assert env_bool("DEBUG", True, {}) is True


def test_env_bool_rejects_other_words_naming_the_variable() -> None:
    with pytest.raises(EnvError, match=r"DEBUG='maybe' is not a boolean"):
        env_bool("DEBUG", False, {"DEBUG": "maybe"})


def test_env_int_parses_numbers_and_uses_default_when_unset_or_empty() -> None:
    assert env_int("CYCLE_INTERVAL", 10, {"CYCLE_INTERVAL": " 30 "}) == 30
    assert env_int("CYCLE_INTERVAL", 10, {}) == 10
    assert env_int("CYCLE_INTERVAL", 10, {"CYCLE_INTERVAL": ""}) == 10


def test_env_int_rejects_text_naming_the_variable() -> None:
    with pytest.raises(EnvError, match=r"CYCLE_INTERVAL='ten' is not a whole number"):
        env_int("CYCLE_INTERVAL", 10, {"CYCLE_INTERVAL": "ten"})


def test_env_int_rejects_values_below_the_minimum() -> None:
    with pytest.raises(EnvError, match=r"CYCLE_INTERVAL=0 is too small: it must be at least 1"):
        env_int("CYCLE_INTERVAL", 10, {"CYCLE_INTERVAL": "0"}, minimum=1)


def test_env_list_splits_on_commas_and_drops_empty_items() -> None:
    hosts = env_list("ALLOWED_HOSTS", [], {"ALLOWED_HOSTS": "gpu.example.org, localhost,,"})
    assert hosts == ["gpu.example.org", "localhost"]
    assert env_list("ALLOWED_HOSTS", ["a"], {}) == ["a"]


def test_sqlite_url_with_relative_path_is_resolved_against_the_base_dir() -> None:
    config = parse_database_url("sqlite:///var/db.sqlite3", base_dir=Path("/srv/app"))
    assert config == {"ENGINE": "django.db.backends.sqlite3", "NAME": "/srv/app/var/db.sqlite3"}


def test_sqlite_url_with_absolute_path_and_memory() -> None:
    assert parse_database_url("sqlite:////tmp/x.sqlite3")["NAME"] == "/tmp/x.sqlite3"
    assert parse_database_url("sqlite:///:memory:")["NAME"] == ":memory:"


def test_postgres_url_gives_every_connection_setting() -> None:
    config = parse_database_url(
        "postgres://gp:s%40cret@db.internal:5433/gpuplatform?sslmode=require"
    )
    assert config == {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "gpuplatform",
        "USER": "gp",
        "PASSWORD": "s@cret",
        "HOST": "db.internal",
        "PORT": "5433",
        "OPTIONS": {"sslmode": "require"},
    }


def test_postgres_url_without_password_or_port() -> None:
    config = parse_database_url("postgresql://postgres@127.0.0.1/gpuplatform")
    assert (config["USER"], config["PASSWORD"], config["HOST"], config["PORT"]) == (
        "postgres",
        "",
        "127.0.0.1",
        "",
    )


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://root@localhost/db", r"unsupported scheme 'mysql'"),
        ("postgres://user@host:5432/", r"names no database"),
        ("postgres://user@host:port/db", r"the port is not a number"),
        ("sqlite://host/db.sqlite3", r"a SQLite URL has no host"),
        ("sqlite:///", r"names no file"),
    ],
)
def test_bad_database_urls_are_rejected_with_a_clear_message(url: str, message: str) -> None:
    with pytest.raises(EnvError, match=message):
        parse_database_url(url)


def test_env_database_uses_the_default_url_when_unset() -> None:
    config = env_database("DATABASE_URL", "sqlite:///var/x.sqlite3", {}, base_dir=Path("/app"))
    assert config["NAME"] == "/app/var/x.sqlite3"


def test_env_database_error_names_the_variable_it_read() -> None:
    with pytest.raises(EnvError, match=r"REPORTING_DATABASE_URL='ftp://x'"):
        env_database(
            "REPORTING_DATABASE_URL",
            "",
            {"REPORTING_DATABASE_URL": "ftp://x"},
            base_dir=Path("/app"),
        )

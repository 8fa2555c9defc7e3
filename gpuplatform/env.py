"""Typed helpers that read settings from environment variables.

Every helper takes the variable name, a default, and optionally the mapping to read from (tests
pass their own dict; the settings module uses ``os.environ``). A value that cannot be parsed
raises ``EnvError`` (an ``ImproperlyConfigured``) whose message names the variable, shows the
bad value and says what is expected, so a misconfigured deployment stops at start-up with a
message an operator can act on.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off", ""})


class EnvError(ImproperlyConfigured):
    """An environment variable holds a value the platform cannot use."""


def _source(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


def env_str(name: str, default: str = "", environ: Mapping[str, str] | None = None) -> str:
    """The variable as a string (surrounding whitespace removed), or ``default`` when unset."""
    value = _source(environ).get(name)
    return default if value is None else value.strip()


def env_bool(name: str, default: bool = False, environ: Mapping[str, str] | None = None) -> bool:
    """``1/true/yes/on`` or ``0/false/no/off`` (any case); ``default`` when unset."""
    value = _source(environ).get(name)
    if value is None:
        return default
    word = value.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise EnvError(
        f"{name}={value!r} is not a boolean: use one of true/false, 1/0, yes/no, on/off."
    )


def env_int(
    name: str,
    default: int,
    environ: Mapping[str, str] | None = None,
    *,
    minimum: int | None = None,
) -> int:
    """The variable as an integer, ``default`` when unset or empty; ``minimum`` is checked."""
    value = _source(environ).get(name)
    if value is None or not value.strip():
        result = default
    else:
        try:
            result = int(value.strip())
        except ValueError:
            raise EnvError(f"{name}={value!r} is not a whole number.") from None
    if minimum is not None and result < minimum:
        raise EnvError(f"{name}={result} is too small: it must be at least {minimum}.")
    return result


def env_list(
    name: str, default: list[str] | None = None, environ: Mapping[str, str] | None = None
) -> list[str]:
    """A comma-separated list (items stripped, empty items dropped); ``default`` when unset."""
    value = _source(environ).get(name)
    if value is None:
        return list(default or [])
    return [item.strip() for item in value.split(",") if item.strip()]


POSTGRES_SCHEMES = frozenset({"postgres", "postgresql", "pgsql"})


def parse_database_url(url: str, *, base_dir: Path | None = None) -> dict[str, Any]:
    """Turn a database URL into a Django ``DATABASES`` entry.

    Supported:
    - ``sqlite:///relative/path.sqlite3`` (relative to ``base_dir``), ``sqlite:////abs/path``,
      ``sqlite:///:memory:``;
    - ``postgres://user:password@host:port/dbname?sslmode=require`` (also ``postgresql://``);
      query parameters become connection ``OPTIONS``.
    """
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme == "sqlite":
        if parts.netloc:
            raise EnvError(
                f"DATABASE_URL={url!r}: a SQLite URL has no host; write sqlite:///relative/path "
                "or sqlite:////absolute/path (three or four slashes)."
            )
        raw_path = unquote(parts.path)
        if raw_path in ("", "/"):
            raise EnvError(f"DATABASE_URL={url!r}: the SQLite URL names no file.")
        name = raw_path[1:]  # drop the slash that separates the (empty) host from the path
        if name != ":memory:" and not Path(name).is_absolute() and base_dir is not None:
            name = str(base_dir / name)
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": name}
    if scheme in POSTGRES_SCHEMES:
        dbname = unquote(parts.path.lstrip("/"))
        if not dbname:
            raise EnvError(
                f"DATABASE_URL={url!r}: the PostgreSQL URL names no database "
                "(expected postgres://user:password@host:port/dbname)."
            )
        try:
            port = parts.port
        except ValueError:
            raise EnvError(f"DATABASE_URL={url!r}: the port is not a number.") from None
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": dbname,
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": unquote(parts.hostname or ""),
            "PORT": str(port) if port else "",
            "OPTIONS": dict(parse_qsl(parts.query)),
        }
    raise EnvError(
        f"DATABASE_URL={url!r}: unsupported scheme {parts.scheme!r}; "
        "use sqlite:///path or postgres://user:password@host:port/dbname."
    )


def env_database(
    name: str, default: str, environ: Mapping[str, str] | None = None, *, base_dir: Path
) -> dict[str, Any]:
    """The Django database settings from a URL variable (see ``parse_database_url``)."""
    url = env_str(name, "", environ) or default
    try:
        return parse_database_url(url, base_dir=base_dir)
    except EnvError as error:
        if name != "DATABASE_URL":
            raise EnvError(str(error).replace("DATABASE_URL", name, 1)) from None
        raise


def env_float(
    name: str,
    default: float,
    environ: Mapping[str, str] | None = None,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
) -> float:
    """The variable as a number, ``default`` when unset or empty; the bounds are checked."""
    value = _source(environ).get(name)
    if value is None or not value.strip():
        result = default
    else:
        try:
            result = float(value.strip())
        except ValueError:
            raise EnvError(f"{name}={value!r} is not a number.") from None
    if minimum is not None and result < minimum:
        raise EnvError(f"{name}={result:g} is too small: it must be at least {minimum:g}.")
    if maximum is not None and result > maximum:
        raise EnvError(f"{name}={result:g} is too large: it must be at most {maximum:g}.")
    return result


def env_proxy_ssl_header(
    name: str, environ: Mapping[str, str] | None = None
) -> tuple[str, str] | None:
    """Django's ``SECURE_PROXY_SSL_HEADER`` from ``Header-Name`` (value ``https``) or
    ``Header-Name: value``, e.g. ``X-Forwarded-Proto``; None when unset or empty. Set it only
    behind a proxy of one's own that sets (and overwrites) that header."""
    value = env_str(name, "", environ)
    if not value:
        return None
    header, _, expected = value.partition(":")
    header, expected = header.strip(), expected.strip() or "https"
    if not header or not all(c.isalnum() or c == "-" for c in header) or " " in expected:
        raise EnvError(
            f"{name}={value!r} is not a header: write the header your proxy sets, such as "
            "X-Forwarded-Proto (meaning X-Forwarded-Proto: https) or 'X-Forwarded-Proto: https'."
        )
    return "HTTP_" + header.upper().replace("-", "_"), expected


REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


def env_cache_url(environ: Mapping[str, str] | None = None) -> str:
    """The Redis of Django's cache: ``CACHE_URL``, else the broker's Redis (``REDIS_URL``) on
    the next database number (``redis://host:6379/0`` -> ``redis://host:6379/1``: clearing the
    cache empties its database, which must not be the broker's); empty: in-process memory.
    ``CACHE_URL=memory://`` keeps the in-process cache even with a Redis broker."""
    explicit = env_str("CACHE_URL", "", environ)
    if explicit == "memory://":
        return ""
    if explicit:
        if not explicit.startswith(REDIS_SCHEMES):
            raise EnvError(
                f"CACHE_URL={explicit!r} is not a Redis URL: use redis://host:6379/1 (a database "
                "of its own, not the broker's: clearing the cache empties it), or memory://."
            )
        return explicit
    broker = env_str("REDIS_URL", "", environ)
    if not broker.startswith(("redis://", "rediss://")):
        return ""
    parts = urlsplit(broker)
    path = parts.path.strip("/")
    if path and not path.isdigit():
        raise EnvError(f"REDIS_URL={broker!r}: the database after the last / is not a number.")
    database = int(path or "0") + 1
    if database > 15:
        raise EnvError(
            f"REDIS_URL={broker!r} uses Redis database 15, so the cache cannot take the next "
            "one: set CACHE_URL to a Redis database of its own (or memory://)."
        )
    return parts._replace(path=f"/{database}").geturl()

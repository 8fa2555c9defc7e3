"""Failed sign-ins and bad tokens, counted in Django's default cache (issue 26).

A password that does not match counts against the username (whether or not the user exists, so
the answer never tells) and the client's address; a bearer token that is unknown, malformed,
revoked or expired counts against the address. ``LOGIN_FAILURE_LIMIT`` failures within
``LOGIN_FAILURE_WINDOW`` seconds lock that username or address out until the window ends: the
login page says so, the API answers 429. A successful sign-in clears its username's count (not
its address's: an attacker's own account must not reset the address it guesses from).

The client's address is DRF's (``REMOTE_ADDR``, or the ``NUM_PROXIES``-th address from the
right of ``X-Forwarded-For`` behind that many proxies of one's own).
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.conf import settings
from django.core.cache import cache
from rest_framework.throttling import BaseThrottle

PREFIX = "lockout"


def client_address(request: Any) -> str:
    """The client's IP address as DRF's throttles see it (see the module docstring)."""
    return str(BaseThrottle().get_ident(request) or "unknown")


def _key(kind: str, value: str) -> str:
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"{PREFIX}:{kind}:{digest}"


def _keys(request: Any, username: str | None) -> list[str]:
    keys = [_key("address", client_address(request))]
    if username is not None:
        keys.append(_key("username", username.strip().lower()))
    return keys


def is_locked_out(request: Any, username: str | None = None) -> bool:
    """Whether the request's address (or ``username``) failed too often lately."""
    limit = settings.LOGIN_FAILURE_LIMIT
    counts = cache.get_many(_keys(request, username))
    return any(count >= limit for count in counts.values())


def record_failure(request: Any, username: str | None = None) -> None:
    """One more failure for the address (and ``username``); the window starts at the first."""
    for key in _keys(request, username):
        if not cache.add(key, 1, timeout=settings.LOGIN_FAILURE_WINDOW):
            try:
                cache.incr(key)
            except ValueError:  # expired in between
                cache.add(key, 1, timeout=settings.LOGIN_FAILURE_WINDOW)


def forget_username(username: str) -> None:
    """A successful sign-in: the username's failures are forgiven."""
    cache.delete(_key("username", username.strip().lower()))


def retry_minutes() -> int:
    """The longest wait, in whole minutes, a lockout can mean."""
    return max(1, -(-settings.LOGIN_FAILURE_WINDOW // 60))

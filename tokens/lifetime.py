"""How long an API token lives (issue 26).

A new token expires after ``API_TOKEN_LIFETIME_DAYS`` (90) unless its owner chooses a date; a
researcher may choose at most ``API_TOKEN_MAX_LIFETIME_DAYS`` (365) ahead; a token that never
expires is for platform admins only, asked for explicitly (``"expires_at": null`` in the API,
"Never expires" on the page). Tokens cannot create tokens (tokens/api.py): a token minted by a
token would outlive the revocation of its parent.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings

from gpuplatform import access


def default_expiry(now: datetime) -> datetime:
    return now + timedelta(days=settings.API_TOKEN_LIFETIME_DAYS)


def may_never_expire(user: Any) -> bool:
    return access.is_platform_admin(user)


def expiry_problem(user: Any, expires_at: datetime | None, now: datetime) -> str | None:
    """What is wrong with ``expires_at`` (None: never) for a token of ``user``, or None."""
    longest = settings.API_TOKEN_MAX_LIFETIME_DAYS
    if expires_at is None:
        if may_never_expire(user):
            return None
        return (
            "Only platform admins may create a token that never expires. Leave the expiry out "
            f"for {settings.API_TOKEN_LIFETIME_DAYS} days, or choose a date within {longest} "
            "days."
        )
    if expires_at <= now:
        return "The expiry must lie in the future."
    if expires_at > now + timedelta(days=longest) and not may_never_expire(user):
        return f"A token may live at most {longest} days: choose an earlier expiry."
    return None

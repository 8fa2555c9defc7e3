"""The login form: Django's, throttled (gpuplatform/lockout.py)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError

from gpuplatform import lockout


class ThrottledAuthenticationForm(AuthenticationForm):
    """Too many failed sign-ins for the username or from the address: refused, with the same
    message whether or not the user exists and whatever the password, until the window ends."""

    def clean(self) -> dict[str, Any]:
        username = self.cleaned_data.get("username") or ""
        if lockout.is_locked_out(self.request, username):
            raise ValidationError(
                "Too many failed sign-in attempts for this account or from your network. "
                f"Wait up to {lockout.retry_minutes()} minutes and try again.",
                code="throttled",
            )
        try:
            cleaned = super().clean()
        except ValidationError:
            lockout.record_failure(self.request, username)
            raise
        lockout.forget_username(username)
        return cleaned

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django import forms
from django.conf import settings
from django.utils import timezone

from tokens import lifetime


class NewTokenForm(forms.Form):
    """Name and lifetime of a new token (tokens/lifetime.py): empty, API_TOKEN_LIFETIME_DAYS;
    at most API_TOKEN_MAX_LIFETIME_DAYS; "Never expires" only offered to platform admins."""

    name = forms.CharField(max_length=100, help_text="What the token is for, e.g. 'CI runner'.")
    expires_in_days = forms.IntegerField(
        required=False, min_value=1, max_value=3650, label="Expires in (days)"
    )
    never_expires = forms.BooleanField(
        required=False, help_text="Platform admins only: the token lives until revoked."
    )

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.user = user
        self.now = timezone.now()
        days = self.fields["expires_in_days"]
        days.help_text = (
            f"Empty: {settings.API_TOKEN_LIFETIME_DAYS} days. "
            f"At most {settings.API_TOKEN_MAX_LIFETIME_DAYS}."
        )
        if lifetime.may_never_expire(user):
            days.help_text = f"Empty: {settings.API_TOKEN_LIFETIME_DAYS} days."
        else:
            del self.fields["never_expires"]

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        if not name:
            raise forms.ValidationError("Give the token a name.")
        return name

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if "expires_in_days" in cleaned:  # a valid number or empty
            problem = lifetime.expiry_problem(self.user, self.expires_at(), self.now)
            if problem:
                self.add_error("expires_in_days", problem)
        return cleaned

    def expires_at(self) -> datetime | None:
        if self.cleaned_data.get("never_expires"):
            return None
        days = self.cleaned_data.get("expires_in_days")
        if not days:
            return lifetime.default_expiry(self.now)
        return self.now + timedelta(days=days)

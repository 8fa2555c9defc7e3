"""API tokens. A token reads ``gpp_<prefix>_<secret>``: the prefix finds the row, the SHA-256 hash
of the secret proves it; the secret itself is never stored."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import datetime

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

TOKEN_SCHEME = "gpp"
PREFIX_LENGTH = 12


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class ApiTokenQuerySet(models.QuerySet["ApiToken"]):
    def active(self, now: datetime | None = None) -> ApiTokenQuerySet:
        moment = now or timezone.now()
        return self.filter(revoked_at__isnull=True).filter(
            Q(expires_at__isnull=True) | Q(expires_at__gt=moment)
        )


class ApiToken(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, help_text="What the token is for, e.g. 'CI runner'.")
    prefix = models.CharField(max_length=PREFIX_LENGTH, unique=True, editable=False)
    secret_hash = models.CharField(max_length=64, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="Empty: never expires.")
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.name} ({TOKEN_SCHEME}_{self.prefix}…)"

    def __repr__(self) -> str:  # never the hash
        return f"<ApiToken {self.prefix} of user {self.user_id}>"

    @classmethod
    def issue(
        cls, *, user: models.Model, name: str, expires_at: datetime | None = None
    ) -> tuple[ApiToken, str]:
        """Create a token; returns it and its full text, which is shown once and never again."""
        prefix = secrets.token_hex(PREFIX_LENGTH // 2)
        secret = secrets.token_urlsafe(32)
        token = cls.objects.create(
            user=user,
            name=name,
            prefix=prefix,
            secret_hash=hash_secret(secret),
            expires_at=expires_at,
        )
        return token, f"{TOKEN_SCHEME}_{prefix}_{secret}"

    def matches(self, secret: str) -> bool:
        return hmac.compare_digest(self.secret_hash, hash_secret(secret))

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None

    def is_expired(self, now: datetime | None = None) -> bool:
        return self.expires_at is not None and self.expires_at <= (now or timezone.now())

    @property
    def status(self) -> str:
        if self.is_revoked:
            return "revoked"
        return "expired" if self.is_expired() else "active"

    def revoke(self, now: datetime | None = None) -> None:
        if self.revoked_at is None:
            self.revoked_at = now or timezone.now()
            self.save(update_fields=["revoked_at"])


def split_token(text: str) -> tuple[str, str] | None:
    """``gpp_<prefix>_<secret>`` -> (prefix, secret), or None when it is not shaped so."""
    scheme, _, rest = text.partition("_")
    prefix, _, secret = rest.partition("_")
    if scheme != TOKEN_SCHEME or len(prefix) != PREFIX_LENGTH or not secret:
        return None
    return prefix, secret

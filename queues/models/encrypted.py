"""Secrets stored encrypted: ``EncryptedTextField`` (a cluster's bearer token).

The database holds ``fernet:<token>`` (Fernet: AES-128-CBC with an HMAC-SHA256, from the
``cryptography`` package); Python code sees the plain text. Keys come from the environment:
``CLUSTER_TOKEN_KEYS``, comma-separated secrets (any long random strings), the first encrypts and
every one decrypts, so a key is rotated by putting a new one first, running
``manage.py rotate_cluster_tokens`` and then dropping the old one (README "Install in a
cluster"). Unset, the key is derived from ``SECRET_KEY`` (``check --deploy`` warns: rotating
SECRET_KEY would then make the stored tokens unreadable).

A value the keys cannot decrypt (its key was dropped) reads as ``UndecryptableSecret``: empty as
text, so it is never sent anywhere, but saved back unchanged, so a save of the row loses nothing;
the cluster's driver refuses it with a message saying what to do.
"""

from __future__ import annotations

import base64
from functools import cache
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings
from django.db import models

PREFIX = "fernet:"


class UndecryptableSecret(str):
    """A stored secret none of the configured keys opens: ``""`` as text, its ciphertext kept."""

    ciphertext: str

    def __new__(cls, ciphertext: str) -> UndecryptableSecret:
        made = super().__new__(cls, "")
        made.ciphertext = ciphertext
        return made


def _fernet_key(secret: str) -> bytes:
    """A Fernet key (32 bytes, URL-safe base64) derived from any secret string."""
    derived = HKDF(
        algorithm=hashes.SHA256(), length=32, salt=None, info=b"gpuplatform cluster tokens"
    ).derive(secret.encode())
    return base64.urlsafe_b64encode(derived)


def key_secrets() -> tuple[str, ...]:
    """The configured secrets, the encrypting one first (SECRET_KEY when none is set)."""
    configured = tuple(getattr(settings, "CLUSTER_TOKEN_KEYS", ()) or ())
    return configured or (str(settings.SECRET_KEY),)


@cache
def _fernet(secrets: tuple[str, ...]) -> MultiFernet:
    return MultiFernet([Fernet(_fernet_key(secret)) for secret in secrets])


def fernet() -> MultiFernet:
    return _fernet(key_secrets())


def encrypt(plain: str) -> str:
    return PREFIX + fernet().encrypt(plain.encode()).decode()


def decrypt(stored: str) -> str:
    """The plain text of a stored value; one without the prefix is a plain value from before
    encryption (the migration encrypts them) and is returned as it is."""
    if not stored.startswith(PREFIX):
        return stored
    try:
        return fernet().decrypt(stored.removeprefix(PREFIX).encode()).decode()
    except InvalidToken:
        return UndecryptableSecret(stored)


def rotate(stored: str) -> str:
    """``stored`` encrypted again with the first key (plain values encrypted); raises
    ``InvalidToken`` when no configured key opens it."""
    if not stored:
        return stored
    if not stored.startswith(PREFIX):
        return encrypt(stored)
    return PREFIX + fernet().rotate(stored.removeprefix(PREFIX).encode()).decode()


class EncryptedTextField(models.TextField):  # type: ignore[type-arg]
    """Text encrypted at rest (see the module docstring); empty stays empty."""

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        if value is None or value == "":
            return value
        return decrypt(str(value))

    def get_prep_value(self, value: Any) -> Any:
        if isinstance(value, UndecryptableSecret):
            return value.ciphertext
        value = super().get_prep_value(value)
        if value is None or value == "":
            return value
        return encrypt(str(value))

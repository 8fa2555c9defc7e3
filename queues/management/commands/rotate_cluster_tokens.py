"""``python manage.py rotate_cluster_tokens``: encrypt every stored cluster token again with the
first key of CLUSTER_TOKEN_KEYS (queues/models/encrypted.py), so older keys can be dropped."""

from __future__ import annotations

from typing import Any

from cryptography.fernet import InvalidToken
from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction

from queues.models import Cluster
from queues.models.encrypted import key_secrets, rotate


class Command(BaseCommand):
    help = (
        "Re-encrypt the stored cluster tokens with the first key of CLUSTER_TOKEN_KEYS. Run it "
        "after putting a new key first; then remove the old key from CLUSTER_TOKEN_KEYS."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        table = connection.ops.quote_name(Cluster._meta.db_table)
        rotated, unreadable = 0, []
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"SELECT id, name, token FROM {table} WHERE token <> ''")
            for pk, name, stored in cursor.fetchall():
                try:
                    new = rotate(stored)
                except InvalidToken:
                    unreadable.append(name)
                    continue
                cursor.execute(f"UPDATE {table} SET token = %s WHERE id = %s", [new, pk])
                rotated += 1
        self.stdout.write(
            f"{rotated} cluster token(s) encrypted with the first of {len(key_secrets())} key(s)"
        )
        if unreadable:
            raise CommandError(
                "no key of CLUSTER_TOKEN_KEYS decrypts the token of "
                + ", ".join(sorted(unreadable))
                + ": put the key they were encrypted with back, or set those tokens again"
            )

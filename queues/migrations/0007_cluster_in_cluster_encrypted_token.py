# Issue 20: a cluster may be the one the platform runs in (its pod's ServiceAccount), and
# cluster tokens are encrypted at rest (queues/models/encrypted.py, CLUSTER_TOKEN_KEYS).

import queues.models.encrypted
from django.db import migrations, models


def _rewrite(schema_editor, change):
    table = schema_editor.quote_name("queues_cluster")
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(f"SELECT id, token FROM {table} WHERE token <> ''")
        for pk, token in cursor.fetchall():
            new = change(token)
            if new != token:
                cursor.execute(f"UPDATE {table} SET token = %s WHERE id = %s", [new, pk])


def encrypt_tokens(apps, schema_editor):
    """Tokens stored in plain text before this migration are encrypted with the first key."""
    from queues.models.encrypted import PREFIX, encrypt

    _rewrite(schema_editor, lambda token: token if token.startswith(PREFIX) else encrypt(token))


def decrypt_tokens(apps, schema_editor):
    """Back to plain text (a token no configured key opens is left as it is)."""
    from queues.models.encrypted import decrypt

    _rewrite(schema_editor, lambda token: str(decrypt(token)) or token)


class Migration(migrations.Migration):

    dependencies = [
        ('queues', '0006_pending_rank'),
    ]

    operations = [
        migrations.AddField(
            model_name='cluster',
            name='in_cluster',
            field=models.BooleanField(default=False, help_text="The Kubernetes cluster the platform runs in, reached with its pod's ServiceAccount (no URL, token or kubeconfig)."),
        ),
        migrations.AlterField(
            model_name='cluster',
            name='token',
            field=queues.models.encrypted.EncryptedTextField(blank=True, help_text='Service-account bearer token (write-only, encrypted at rest).'),
        ),
        migrations.RunPython(encrypt_tokens, decrypt_tokens),
    ]

"""Cluster tokens at rest (issue 20): encrypted with CLUSTER_TOKEN_KEYS (never plain in the
database, never in an answer), readable through a key rotation, re-encrypted by
``manage.py rotate_cluster_tokens``; a token whose key was dropped is kept, refused by the
driver with a message saying what to do; the migration encrypts the tokens stored before it."""

from __future__ import annotations

import pytest
from django.core.checks import run_checks
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client

from queues.clusters.base import InvalidSpec
from queues.clusters.factory import get_driver
from queues.models import Cluster
from queues.models.encrypted import UndecryptableSecret

TOKEN = "eyJhbGciOiJSUzI1NiJ9.service-account-token-of-the-remote-cluster"
OLD = "old-key-0123456789-0123456789-0123456789"
NEW = "new-key-9876543210-9876543210-9876543210"


def stored(cluster: Cluster) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT token FROM queues_cluster WHERE id = %s", [cluster.pk])
        return str(cursor.fetchone()[0])


def remote(**fields) -> Cluster:
    return Cluster.objects.create(
        name="remote",
        driver=Cluster.Driver.KUBERNETES,
        api_url="https://k8s.example.org:6443",
        token=TOKEN,
        **fields,
    )


def test_a_token_is_encrypted_in_the_database_and_plain_in_python(db: None, settings) -> None:
    settings.CLUSTER_TOKEN_KEYS = [OLD]
    cluster = remote()
    raw = stored(cluster)
    assert raw.startswith("fernet:") and TOKEN not in raw
    assert Cluster.objects.get(pk=cluster.pk).token == TOKEN


def test_the_api_never_returns_the_token_or_its_ciphertext(
    db: None, settings, platform_admin
) -> None:
    settings.CLUSTER_TOKEN_KEYS = [OLD]
    cluster = remote()
    client = Client()
    client.force_login(platform_admin)
    for url in ("/api/v1/clusters/", f"/api/v1/clusters/{cluster.pk}/"):
        body = client.get(url).content.decode()
        assert TOKEN not in body and "fernet:" not in body
        assert '"has_token":true' in body.replace(" ", "")


def test_rotation_new_key_first_then_rotate_then_drop_the_old(db: None, settings) -> None:
    settings.CLUSTER_TOKEN_KEYS = [OLD]
    cluster = remote()
    before = stored(cluster)

    settings.CLUSTER_TOKEN_KEYS = [NEW, OLD]  # 1. the new key first: old tokens still read
    assert Cluster.objects.get(pk=cluster.pk).token == TOKEN
    call_command("rotate_cluster_tokens")  # 2. every token encrypted with the new key
    assert stored(cluster) != before

    settings.CLUSTER_TOKEN_KEYS = [NEW]  # 3. the old key dropped
    assert Cluster.objects.get(pk=cluster.pk).token == TOKEN


def test_a_token_whose_key_was_dropped_is_kept_and_refused_clearly(db: None, settings) -> None:
    settings.CLUSTER_TOKEN_KEYS = [OLD]
    cluster = remote()
    ciphertext = stored(cluster)

    settings.CLUSTER_TOKEN_KEYS = [NEW]  # dropped before rotating
    lost = Cluster.objects.get(pk=cluster.pk)
    assert isinstance(lost.token, UndecryptableSecret) and lost.token == ""
    assert lost.has_token
    with pytest.raises(InvalidSpec, match="none of CLUSTER_TOKEN_KEYS decrypts the stored token"):
        get_driver(lost)
    lost.status_message = "saved for another reason"
    lost.save()
    assert stored(cluster) == ciphertext  # nothing lost: the old key can still be put back
    with pytest.raises(CommandError, match="decrypts the token of remote"):
        call_command("rotate_cluster_tokens")

    settings.CLUSTER_TOKEN_KEYS = [NEW, OLD]
    assert Cluster.objects.get(pk=cluster.pk).token == TOKEN


def test_without_keys_the_deploy_check_warns(settings) -> None:
    settings.CLUSTER_TOKEN_KEYS = []
    ids = [message.id for message in run_checks(include_deployment_checks=True)]
    assert "queues.W001" in ids
    settings.CLUSTER_TOKEN_KEYS = [OLD]
    ids = [message.id for message in run_checks(include_deployment_checks=True)]
    assert "queues.W001" not in ids


@pytest.mark.django_db(transaction=True)
def test_the_migration_encrypts_the_tokens_stored_before_it(settings) -> None:
    settings.CLUSTER_TOKEN_KEYS = [OLD]
    executor = MigrationExecutor(connection)
    executor.migrate([("queues", "0006_pending_rank")])
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO queues_cluster (name, driver, api_url, token, kubeconfig_path, "
                "kubeconfig_context, verify_tls, ca_cert, status, status_message) "
                "VALUES ('legacy', 'kubernetes', 'https://k8s:6443', %s, '', '', %s, '', "
                "'unknown', '')",
                [TOKEN, True],
            )
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
    cluster = Cluster.objects.get(name="legacy")
    assert stored(cluster).startswith("fernet:")
    assert cluster.token == TOKEN and not cluster.in_cluster

"""Domain models reject bad values twice: in full_clean() with a message a user can act on,
and in the database (constraints) even when validation is bypassed."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from queues.models import (
    Cluster,
    Flavor,
    Job,
    JobFlavor,
    Membership,
    Node,
    Queue,
    Quota,
    ServiceClass,
    Team,
)

pytestmark = pytest.mark.django_db


def messages_of(error: ValidationError) -> dict[str, list[str]]:
    return error.message_dict


def assert_db_rejects(create: Callable[[], object]) -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        create()


# --- Team, Membership -----------------------------------------------------------------------


def test_team_name_must_be_a_dns_label() -> None:
    with pytest.raises(ValidationError) as error:
        Team(name="Team A!").full_clean()
    assert "Use lowercase letters, digits and hyphens" in messages_of(error.value)["name"][0]


def test_user_cannot_join_the_same_team_twice(researcher_a: User, team_a: Team) -> None:
    duplicate = Membership(user=researcher_a, team=team_a, role=Membership.Role.TEAM_ADMIN)
    with pytest.raises(ValidationError, match="already a member of this team"):
        duplicate.full_clean()
    assert_db_rejects(duplicate.save)


def test_membership_role_must_be_member_or_team_admin(outsider: User, team_a: Team) -> None:
    bad = Membership(user=outsider, team=team_a, role="owner")
    with pytest.raises(ValidationError) as error:
        bad.full_clean()
    assert "role" in messages_of(error.value)
    assert_db_rejects(bad.save)


# --- Flavor ---------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [0.0, -0.5, 1.5])
def test_flavor_gpu_equivalent_must_be_in_zero_one(value: float) -> None:
    flavor = Flavor(name="odd", resource="nvidia.com/gpu", gpu_equivalent=value)
    with pytest.raises(ValidationError) as error:
        flavor.full_clean()
    assert "greater than 0 and at most 1" in messages_of(error.value)["gpu_equivalent"][0]
    assert_db_rejects(flavor.save)


def test_mig_flavor_learns_its_profile_from_the_resource() -> None:
    flavor = Flavor(name="h100-1g.10gb", resource="nvidia.com/mig-1g.10gb", gpu_equivalent=1 / 7)
    flavor.full_clean()
    assert flavor.mig_profile == "1g.10gb"
    assert flavor.is_mig


def test_mig_profile_must_match_the_resource() -> None:
    flavor = Flavor(name="h100-1g.10gb", resource="nvidia.com/mig-1g.10gb", mig_profile="3g.40gb")
    with pytest.raises(ValidationError) as error:
        flavor.full_clean()
    assert "is MIG profile '1g.10gb', not '3g.40gb'" in messages_of(error.value)["mig_profile"][0]


def test_flavor_resource_must_be_a_kubernetes_resource_name() -> None:
    with pytest.raises(ValidationError) as error:
        Flavor(name="h100", resource="gpu").full_clean()
    assert "nvidia.com/gpu" in messages_of(error.value)["resource"][0]


def test_flavor_node_selector_must_map_strings_to_strings() -> None:
    flavor = Flavor(name="h100", resource="nvidia.com/gpu", node_selector={"zone": 3})
    with pytest.raises(ValidationError) as error:
        flavor.full_clean()
    assert "not a text name: text value pair" in messages_of(error.value)["node_selector"][0]


def test_flavor_names_may_contain_dots_for_mig_profiles() -> None:
    Flavor(
        name="h100-3g.40gb", resource="nvidia.com/mig-3g.40gb", gpu_equivalent=3 / 7
    ).full_clean()


# --- ServiceClass ---------------------------------------------------------------------------


def test_service_class_max_runtime_cannot_be_shorter_than_min_runtime() -> None:
    service_class = ServiceClass(name="short", priority=1, min_runtime=600, max_runtime=60)
    with pytest.raises(ValidationError) as error:
        service_class.full_clean()
    assert "shorter than the minimum runtime" in messages_of(error.value)["max_runtime"][0]


def test_service_class_price_multiplier_cannot_be_negative() -> None:
    service_class = ServiceClass(name="weird", price_multiplier=Decimal("-1"))
    with pytest.raises(ValidationError, match="cannot be negative"):
        service_class.full_clean()
    assert_db_rejects(service_class.save)


def test_service_class_negative_grace_period_is_rejected_by_the_database() -> None:
    assert_db_rejects(lambda: ServiceClass.objects.create(name="neg", grace_period=-5))


# --- Queue, Quota ---------------------------------------------------------------------------


@pytest.mark.parametrize("weight", [0.0, -1.0])
def test_queue_weight_must_be_positive(team_a: Team, weight: float) -> None:
    queue = Queue(team=team_a, name="zero", weight=weight)
    with pytest.raises(ValidationError) as error:
        queue.full_clean()
    assert "greater than 0" in messages_of(error.value)["weight"][0]
    assert_db_rejects(queue.save)


def test_queue_name_is_unique_within_a_team_only(
    queue_a: Queue, team_a: Team, team_b: Team
) -> None:
    with pytest.raises(ValidationError, match="This team already has a queue with this name"):
        Queue(team=team_a, name="main").full_clean()
    assert_db_rejects(lambda: Queue.objects.create(team=team_a, name="main"))
    Queue(team=team_b, name="main").full_clean()  # another team may reuse the name


def test_quota_lending_limit_cannot_exceed_nominal(queue_a: Queue, db: None) -> None:
    flavor = Flavor.objects.create(name="a100-80gb", resource="nvidia.com/gpu")
    quota = Quota(queue=queue_a, flavor=flavor, nominal=4, lending_limit=6)
    with pytest.raises(ValidationError) as error:
        quota.full_clean()
    assert (
        "The lending limit (6) cannot exceed the nominal quota (4)"
        in messages_of(error.value)["lending_limit"][0]
    )
    assert_db_rejects(quota.save)


def test_quota_values_cannot_be_negative(queue_a: Queue) -> None:
    flavor = Flavor.objects.create(name="a100-80gb", resource="nvidia.com/gpu")
    with pytest.raises(ValidationError) as error:
        Quota(queue=queue_a, flavor=flavor, nominal=-1, borrowing_limit=-2).full_clean()
    assert set(messages_of(error.value)) >= {"nominal", "borrowing_limit"}
    assert_db_rejects(lambda: Quota.objects.create(queue=queue_a, flavor=flavor, nominal=-1))
    assert_db_rejects(
        lambda: Quota.objects.create(queue=queue_a, flavor=flavor, nominal=1, borrowing_limit=-1)
    )


def test_one_quota_per_queue_and_flavor(queue_a: Queue, flavor_h100: Flavor) -> None:
    with pytest.raises(ValidationError, match="already has a quota for this flavor"):
        Quota(queue=queue_a, flavor=flavor_h100, nominal=2).full_clean()
    assert_db_rejects(lambda: Quota.objects.create(queue=queue_a, flavor=flavor_h100, nominal=2))


# --- Cluster, Node --------------------------------------------------------------------------


def test_kubernetes_cluster_needs_credentials() -> None:
    with pytest.raises(ValidationError, match="needs either an API server URL and a token"):
        Cluster(name="prod", driver=Cluster.Driver.KUBERNETES).full_clean()
    Cluster(
        name="prod",
        driver=Cluster.Driver.KUBERNETES,
        api_url="https://k8s.example.org:6443",
        token="secret-token",
    ).full_clean()
    Cluster(name="prod", driver=Cluster.Driver.KUBERNETES, kubeconfig_path="/etc/kube").full_clean()


def test_cluster_repr_never_shows_the_token() -> None:
    cluster = Cluster(name="prod", driver="kubernetes", token="very-secret-token")
    assert "very-secret-token" not in repr(cluster)
    assert "very-secret-token" not in str(cluster)


def test_cluster_driver_must_be_known() -> None:
    assert_db_rejects(lambda: Cluster.objects.create(name="x", driver="slurm"))


def test_node_capacity_must_name_known_flavors_with_whole_counts(flavor_h100: Flavor) -> None:
    cluster = Cluster.objects.create(name="sim")
    with pytest.raises(ValidationError) as error:
        Node(cluster=cluster, name="n1", capacity={"h100": 8, "b200": 8}).full_clean()
    assert "Unknown flavor(s): b200" in messages_of(error.value)["capacity"][0]
    with pytest.raises(ValidationError) as error:
        Node(cluster=cluster, name="n1", capacity={"h100": -1}).full_clean()
    assert "at least 0" in messages_of(error.value)["capacity"][0]


def test_node_name_is_unique_per_cluster(flavor_h100: Flavor) -> None:
    cluster = Cluster.objects.create(name="sim")
    Node.objects.create(cluster=cluster, name="n1", capacity={"h100": 8})
    assert_db_rejects(lambda: Node.objects.create(cluster=cluster, name="n1"))


# --- Job ------------------------------------------------------------------------------------


def new_job(queue: Queue, owner: User, service_class: ServiceClass, **fields: object) -> Job:
    values: dict[str, object] = {"name": "train", "image": "pytorch/pytorch:2.4.0"}
    values.update(fields)
    return Job(queue=queue, owner=owner, service_class=service_class, **values)


def test_valid_job_passes_validation(
    queue_a: Queue, researcher_a: User, service_class_std: ServiceClass
) -> None:
    new_job(queue_a, researcher_a, service_class_std, workers=4, min_workers=2).full_clean()


def test_job_needs_at_least_one_worker_and_gpu(
    queue_a: Queue, researcher_a: User, service_class_std: ServiceClass
) -> None:
    job = new_job(queue_a, researcher_a, service_class_std, workers=0, gpus_per_worker=0)
    with pytest.raises(ValidationError) as error:
        job.full_clean()
    assert "at least one worker" in messages_of(error.value)["workers"][0]
    assert "at least one GPU" in messages_of(error.value)["gpus_per_worker"][0]
    assert_db_rejects(job.save)


def test_min_workers_cannot_exceed_workers(
    queue_a: Queue, researcher_a: User, service_class_std: ServiceClass
) -> None:
    job = new_job(queue_a, researcher_a, service_class_std, workers=2, min_workers=3)
    with pytest.raises(ValidationError) as error:
        job.full_clean()
    assert "min_workers (3) cannot exceed workers (2)" in messages_of(error.value)["min_workers"][0]
    assert_db_rejects(job.save)


def test_topology_needs_both_level_and_mode(
    queue_a: Queue, researcher_a: User, service_class_std: ServiceClass
) -> None:
    job = new_job(queue_a, researcher_a, service_class_std, topology_level="rack")
    with pytest.raises(ValidationError) as error:
        job.full_clean()
    assert "required or preferred" in messages_of(error.value)["topology_mode"][0]
    assert_db_rejects(job.save)
    job = new_job(queue_a, researcher_a, service_class_std, topology_mode="required")
    with pytest.raises(ValidationError) as error:
        job.full_clean()
    assert "Name the topology level" in messages_of(error.value)["topology_level"][0]


def test_job_command_must_be_a_list_of_strings(
    queue_a: Queue, researcher_a: User, service_class_std: ServiceClass
) -> None:
    job = new_job(queue_a, researcher_a, service_class_std, command="python train.py")
    with pytest.raises(ValidationError) as error:
        job.full_clean()
    assert "list of strings" in messages_of(error.value)["command"][0]


def test_job_estimated_runtime_must_be_positive(
    queue_a: Queue, researcher_a: User, service_class_std: ServiceClass
) -> None:
    job = new_job(queue_a, researcher_a, service_class_std, estimated_runtime=0)
    with pytest.raises(ValidationError, match="greater than 0 seconds"):
        job.full_clean()
    assert_db_rejects(job.save)


def test_queue_refuses_service_classes_it_does_not_allow(
    queue_a: Queue, researcher_a: User, service_class_std: ServiceClass
) -> None:
    spot = ServiceClass.objects.create(name="spot", priority=10)
    queue_a.allowed_service_classes.set([spot])
    job = new_job(queue_a, researcher_a, service_class_std)
    with pytest.raises(ValidationError) as error:
        job.full_clean()
    assert (
        "Queue team-a/main does not accept the 'standard' class; it accepts: spot."
        in messages_of(error.value)["service_class"][0]
    )


def test_closed_queue_refuses_new_jobs(
    queue_a: Queue, researcher_a: User, service_class_std: ServiceClass
) -> None:
    queue_a.is_open = False
    queue_a.save()
    with pytest.raises(ValidationError) as error:
        new_job(queue_a, researcher_a, service_class_std).full_clean()
    assert "closed to new jobs" in messages_of(error.value)["queue"][0]


def test_acceptable_flavors_keep_their_order(
    make_job: Callable[..., Job], queue_a: Queue, researcher_a: User, flavor_h100: Flavor
) -> None:
    a100 = Flavor.objects.create(name="a100-80gb", resource="nvidia.com/gpu")
    job = make_job(queue=queue_a, owner=researcher_a)
    job.set_acceptable_flavors([a100, flavor_h100])
    assert job.acceptable_flavor_names() == ["a100-80gb", "h100"]
    job.set_acceptable_flavors([flavor_h100])
    assert job.acceptable_flavor_names() == ["h100"]


def test_acceptable_flavors_cannot_repeat_or_be_empty(
    make_job: Callable[..., Job], queue_a: Queue, researcher_a: User, flavor_h100: Flavor
) -> None:
    job = make_job(queue=queue_a, owner=researcher_a)
    with pytest.raises(ValidationError, match="repeated: h100"):
        job.set_acceptable_flavors([flavor_h100, flavor_h100])
    with pytest.raises(ValidationError, match="at least one acceptable flavor"):
        job.set_acceptable_flavors([])
    assert_db_rejects(lambda: JobFlavor.objects.create(job=job, flavor=flavor_h100, rank=5))

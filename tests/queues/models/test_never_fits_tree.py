"""The submit check's "can never fit" reads the cohort tree (docs/SCHEDULING.md section 2a): a
queue may get what its cohort's siblings lend through the parent, and no more."""

from __future__ import annotations

import pytest

from queues.models import Cluster, Cohort, Flavor, Node, Queue, Quota, ServiceClass, Team
from queues.models.job_rules import Submission, problems

pytestmark = pytest.mark.django_db


@pytest.fixture
def tree(
    queue_a: Queue, queue_b: Queue, team_b: Team, cohort: Cohort, flavor_h100: Flavor
) -> Queue:
    """``org`` over ``research`` (team-a/main 8, team-b/main 8) and ``biology`` (team-b/bio 6);
    one cluster of four 8-H100 nodes."""
    org = Cohort.objects.create(name="org")
    cohort.parent = org
    cohort.save()
    biology = Cohort.objects.create(name="biology", parent=org)
    bio = Queue.objects.create(team=team_b, name="bio", cohort=biology)
    Quota.objects.create(queue=bio, flavor=flavor_h100, nominal=6)
    cluster = Cluster.objects.create(name="c1")
    for i in range(4):
        Node.objects.create(cluster=cluster, name=f"n{i}", capacity={"h100": 8})
    return queue_a


def _messages(queue: Queue, flavor: Flavor, cls: ServiceClass, workers: int) -> list[str]:
    submission = Submission(
        queue=queue, service_class=cls, flavors=[flavor], name="train", image="img",
        command=["python"], workers=workers, gpus_per_worker=4, estimated_runtime=3600,
    )  # fmt: skip
    return [p.message for p in problems(None, submission) if p.field == "workers"]


def test_a_job_larger_than_the_cohort_but_within_the_tree_may_be_submitted(
    tree: Queue, flavor_h100: Flavor, service_class_std: ServiceClass
) -> None:
    """20 GPUs: more than research's 16, within the 22 research can get through org."""
    assert _messages(tree, flavor_h100, service_class_std, 5) == []


def test_a_job_larger_than_the_whole_tree_can_never_fit(
    tree: Queue, flavor_h100: Flavor, service_class_std: ServiceClass
) -> None:
    (message,) = _messages(tree, flavor_h100, service_class_std, 6)
    assert "more than queue team-a/main can ever use" in message
    assert "cohort research can get through its cohort tree (22)" in message

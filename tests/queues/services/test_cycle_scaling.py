"""A cycle's queries grow with what changes, not with what runs (issue 27): a steady cycle reads
and writes as much with 14 running jobs as with 2, launches go to the driver in one batch, and a
job the cluster refuses in a batch fails alone."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from django.db import connection
from django.db.models.signals import post_init
from django.test.utils import CaptureQueriesContext

from queues.clusters.base import QuotaExceeded, RequestRejected, WorkloadConflict
from queues.clusters.factory import DRIVER_FACTORIES
from queues.models import Job, JobEvent, SimulatedWorkload
from queues.services.effects import launch, run_effects
from tests.queues.services.helpers import later


def counted(queries: CaptureQueriesContext) -> int:
    """The queries of the work measured: the cycle-duration histogram's buckets (and the
    savepoints of a bucket's first row) depend on how long the cycle took, not on the jobs."""
    return sum(
        1
        for query in queries.captured_queries
        if "queues_metriccounter" not in query["sql"] and "SAVEPOINT" not in query["sql"]
    )


def running(count: int, submit: Callable[..., Job], cycle: Callable[..., Any], at: float) -> None:
    for i in range(count):
        submit(gpus=1, name=f"job-{at}-{i}", team="ab"[i % 2], at=later(at))
    cycle(later(at + 1))  # admitted and launched
    cycle(later(at + 2))  # started
    cycle(later(at + 3))  # the ledger opened their rows


def steady_cycle_queries(cycle: Callable[..., Any], at: float) -> int:
    with CaptureQueriesContext(connection) as queries:
        cycle(later(at))
    return counted(queries)


def test_a_steady_cycle_runs_as_many_queries_with_14_running_jobs_as_with_2(world, submit, cycle):
    running(2, submit, cycle, at=0)
    with_two = steady_cycle_queries(cycle, 10)
    assert steady_cycle_queries(cycle, 11) == with_two

    running(12, submit, cycle, at=20)
    assert Job.objects.filter(state=Job.State.RUNNING).count() == 14

    assert steady_cycle_queries(cycle, 30) == with_two
    assert steady_cycle_queries(cycle, 31) == with_two


def steady_cycle_objects(cycle: Callable[..., Any], at: float) -> Counter[str]:
    """The model objects a steady cycle builds, by model (rows read as values are not); not the
    counters, whose first row of a duration bucket depends on how long the cycle took."""
    built: Counter[str] = Counter()

    def count(sender: type, **kwargs: Any) -> None:
        if sender.__name__ != "MetricCounter":
            built[sender.__name__] += 1

    post_init.connect(count)
    try:
        cycle(later(at))
    finally:
        post_init.disconnect(count)
    return built


def test_a_steady_cycle_builds_no_model_object_per_running_job(world, submit, cycle):
    """The sync reads the running jobs, their runtimes and the simulated workloads as values,
    and makes model objects only of the jobs whose state may change."""
    running(2, submit, cycle, at=0)
    with_two = steady_cycle_objects(cycle, 10)

    running(12, submit, cycle, at=20)
    with_fourteen = steady_cycle_objects(cycle, 30)

    assert Job.objects.filter(state=Job.State.RUNNING).count() == 14
    assert with_fourteen == with_two
    for model in ("Job", "JobRuntime", "SimulatedWorkload", "UsageRecord"):
        assert with_fourteen[model] == 0, with_fourteen


def test_jobs_that_start_together_are_read_as_objects_once(world, submit, cycle):
    running(2, submit, cycle, at=0)
    for i in range(4):
        submit(gpus=1, name=f"more-{i}", at=later(19))
    cycle(later(20))  # admitted and launched
    built = steady_cycle_objects(cycle, 21)
    assert built["Job"] == 2 * 4  # the four that start, by the sync and by the ledger; not the two
    assert Job.objects.filter(state=Job.State.RUNNING).count() == 6
    assert JobEvent.objects.filter(kind=JobEvent.Kind.STARTED).count() == 6


def admitted(count: int, submit: Callable[..., Job]) -> list[Job]:
    """``count`` admitted jobs whose launches did not happen (the side effects are dropped)."""
    jobs = [submit(gpus=1, name=f"job-{i}", team="ab"[i % 2]) for i in range(count)]
    from queues.services import run_cycle

    run_cycle(now=later(1))  # no on_commit callbacks run: nothing launched yet
    assert all(Job.objects.get(pk=j.pk).state == Job.State.ADMITTED for j in jobs)
    return list(Job.objects.filter(pk__in=[j.pk for j in jobs]).order_by("pk"))


def launch_queries(jobs: list[Job]) -> int:
    with CaptureQueriesContext(connection) as queries:
        run_effects([launch(job) for job in jobs], later(2))
    return len(queries)


def test_launches_of_2_or_12_jobs_run_the_same_queries(world, submit):
    jobs = admitted(14, submit)

    few = launch_queries(jobs[:2])
    many = launch_queries(jobs[2:])

    assert few == many
    assert SimulatedWorkload.objects.count() == 14
    assert launch_queries(jobs) <= few  # again: idempotent, nothing new
    assert SimulatedWorkload.objects.count() == 14


def test_a_batch_launches_all_but_the_job_whose_previous_workers_still_terminate(world, submit):
    jobs = admitted(3, submit)
    SimulatedWorkload.objects.create(
        cluster=world.cluster,
        job_id=str(jobs[1].pk),
        team="team-b",
        workers=[[0, "n1"]],
        launched_at=later(0),
        run_seconds=60,
        stop_requested_at=later(0.5),
    )

    run_effects([launch(job) for job in jobs], later(2))

    launched = set(SimulatedWorkload.objects.values_list("job_id", "stop_requested_at"))
    assert launched == {(str(jobs[0].pk), None), (str(jobs[2].pk), None),
                        (str(jobs[1].pk), later(0.5))}  # fmt: skip
    assert {j.state for j in Job.objects.all()} == {Job.State.ADMITTED}  # it waits, not fails


class RefusingDriver:
    """Launches in batches; refuses one job as invalid and another for quota."""

    def __init__(self, rejected: str, over_quota: str) -> None:
        self.rejected, self.over_quota = rejected, over_quota
        self.batches: list[list[str]] = []
        self.stopped: list[str] = []

    def launch_many(self, specs: list[Any]) -> dict[str, Exception]:
        self.batches.append([s.job_id for s in specs])
        return {
            self.rejected: RequestRejected("admission webhook denied the request"),
            self.over_quota: QuotaExceeded("exceeded quota: team-a"),
        }

    def launch(self, spec: Any) -> None:
        raise AssertionError("launches go in batches")

    def stop(self, job_id: str, namespace: str, grace_period_seconds: int) -> None:
        self.stopped.append(job_id)

    def scale(self, spec: Any) -> None:
        raise WorkloadConflict("not here")

    def close(self) -> None:
        return None


def test_a_job_refused_in_a_batch_fails_alone_and_one_over_quota_is_requeued(
    world, submit, monkeypatch
):
    jobs = admitted(4, submit)
    driver = RefusingDriver(rejected=str(jobs[0].pk), over_quota=str(jobs[1].pk))
    monkeypatch.setitem(DRIVER_FACTORIES, "simulated", lambda cluster, now: driver)

    run_effects([launch(job) for job in jobs], later(2))

    assert driver.batches == [[str(j.pk) for j in jobs]]
    states = [Job.objects.get(pk=j.pk).state for j in jobs]
    assert states == [Job.State.FAILED, Job.State.PENDING, Job.State.ADMITTED,
                      Job.State.ADMITTED]  # fmt: skip
    assert sorted(driver.stopped) == sorted([str(jobs[0].pk), str(jobs[1].pk)])


def starting_cycle_queries(
    count: int, submit: Callable[..., Job], cycle: Callable[..., Any], at: float
) -> int:
    for i in range(count):
        submit(gpus=1, name=f"job-{at}-{i}", team="ab"[i % 2], at=later(at))
    cycle(later(at + 1))  # admitted and launched
    with CaptureQueriesContext(connection) as queries:
        cycle(later(at + 2))  # their workers run: they start, the ledger opens their rows
    return counted(queries)


def test_starting_12_jobs_takes_as_many_queries_as_starting_2(world, submit, cycle):
    starting_cycle_queries(1, submit, cycle, at=0)  # one runs already: the ledger has a row
    two = starting_cycle_queries(2, submit, cycle, at=10)
    twelve = starting_cycle_queries(12, submit, cycle, at=20)

    assert Job.objects.filter(state=Job.State.RUNNING).count() == 15
    assert JobEvent.objects.filter(kind=JobEvent.Kind.STARTED).count() == 15
    assert twelve == two

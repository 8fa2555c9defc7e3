"""The worker keeps the engine's state between live cycles (gpusched/engine/snapshot_keep.py):
the engine gets the last cycle's objects for what did not change, so it reuses what it learned
about them, and decides every cycle exactly what a fresh engine decides on the same snapshot,
while jobs come, go, start and are stopped, and while nodes, quotas and classes are edited."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from gpusched.engine import model as engine
from gpusched.engine.cycle import run_cycle as engine_decide
from gpusched.engine.snapshot_keep import SnapshotKeep
from gpusched.engine.state import EngineState
from queues.models import Job, Node, Quota, ServiceClass
from queues.services import cancel_job, run_cycle
from queues.services.snapshot import build_snapshot
from tests.queues.services.helpers import later


class Decisions:
    """Stands in for the engine in the live cycle: reads the snapshot again from the database
    (the cycle's own copy has the last cycle's objects in it), decides that with a fresh
    state and the cycle's with the kept one, and keeps both answers and snapshots."""

    def __init__(self) -> None:
        self.snapshots: list[engine.Snapshot] = []
        self.read_again: list[engine.Snapshot] = []
        self.pairs: list[tuple[engine.CycleResult, engine.CycleResult]] = []

    def __call__(
        self, snapshot: engine.Snapshot, policy: str, *, state: EngineState
    ) -> engine.CycleResult:
        read_again = build_snapshot(datetime.fromtimestamp(snapshot.now, UTC)).snapshot
        fresh = engine_decide(read_again, policy, state=EngineState())
        kept = engine_decide(snapshot, policy, state=state)
        self.snapshots.append(snapshot)
        self.read_again.append(read_again)
        self.pairs.append((kept, fresh))
        return kept


@pytest.fixture
def decisions(monkeypatch: pytest.MonkeyPatch) -> Decisions:
    seen = Decisions()
    monkeypatch.setattr("queues.services.cycle.decide", seen)
    return seen


@pytest.fixture
def kept_cycle(
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> Callable[[datetime], None]:
    keep = SnapshotKeep()

    def run(at: datetime) -> None:
        with django_capture_on_commit_callbacks(execute=True):
            run_cycle(now=at, keep=keep)

    return run


def test_kept_cycles_decide_what_a_fresh_engine_decides_while_everything_changes(
    world: SimpleNamespace,
    submit: Callable[..., Job],
    kept_cycle: Callable[[datetime], None],
    decisions: Decisions,
) -> None:
    for i in range(3):
        submit(team="a", gpus=8, name=f"a-big-{i}", at=later(i))
    for i in range(3):
        submit(team="b", gpus=4, cls="spot", name=f"b-spot-{i}", at=later(3 + i))
    kept_cycle(later(10))  # a's first job within nominal; the rest borrow or wait
    kept_cycle(later(20))  # started
    kept_cycle(later(30))  # nothing changed
    submit(team="b", gpus=8, name="b-reclaims", at=later(35))
    kept_cycle(later(40))  # reclaim: a borrower is stopped for b's within-nominal job
    cancel_job(Job.objects.get(name="a-big-2"), world.alice, now=later(45))
    kept_cycle(later(50))
    Node.objects.filter(name="n1").update(cordoned=True)
    kept_cycle(later(60))
    Quota.objects.filter(queue=world.queue_b).update(nominal=4)
    ServiceClass.objects.filter(name="spot").update(priority=20)
    submit(team="a", gpus=4, cls="production", name="a-prod", at=later(65))
    kept_cycle(later(70))
    Node.objects.filter(name="n1").update(cordoned=False)
    # a waiting job's own fields edited behind the cycle's back: it must not be reused
    waiting = Job.objects.filter(state=Job.State.PENDING).order_by("pk").first()
    assert waiting is not None
    Job.objects.filter(pk=waiting.pk).update(
        workers=1,
        gpus_per_worker=2,
        estimated_runtime=600,
        topology_level="rack",
        topology_mode="preferred",
    )
    for at in (2000, 2010, 4000, 4010, 8000):
        kept_cycle(later(at))  # grace periods end, victims requeue, jobs finish

    assert len(decisions.pairs) == 12
    assert decisions.snapshots == decisions.read_again  # only equal objects were swapped in
    for kept, fresh in decisions.pairs:
        assert kept == fresh
    # the run did decide things: admissions, a stop, and waiting jobs explained
    assert any(kept.admits for kept, _ in decisions.pairs)
    assert any(kept.stops for kept, _ in decisions.pairs)
    assert any(kept.pending for kept, _ in decisions.pairs)


def test_what_did_not_change_reaches_the_engine_as_the_same_objects(
    world: SimpleNamespace,
    submit: Callable[..., Job],
    kept_cycle: Callable[[datetime], None],
    decisions: Decisions,
) -> None:
    running = submit(team="a", gpus=8, name="runs", at=later(0))
    waiting = submit(team="a", gpus=8, workers=2, name="waits", at=later(1))  # waits behind "runs"
    kept_cycle(later(10))
    kept_cycle(later(20))  # "runs" started
    kept_cycle(later(30))
    submit(team="b", gpus=8, name="new", at=later(35))
    kept_cycle(later(40))

    def job(snapshot: engine.Snapshot, pk: int) -> Any:
        jobs = {j.name: j for j in (*snapshot.pending, *snapshot.admitted)}
        return jobs.get(str(pk))

    before, after = decisions.snapshots[2], decisions.snapshots[3]
    assert job(after, waiting.pk) is job(before, waiting.pk)
    assert job(after, running.pk) is job(before, running.pk)
    assert after.clusters is before.clusters
    assert after.service_classes is before.service_classes
    queues_before = {q.name: q.quotas for q in before.queues}
    assert all(q.quotas is queues_before[q.name] for q in after.queues)
    # a job that changed is new to the engine: "runs" started between the first two cycles
    assert job(decisions.snapshots[1], running.pk) is not job(decisions.snapshots[0], running.pk)
    Node.objects.filter(name="n1").update(cordoned=True)
    kept_cycle(later(50))
    assert decisions.snapshots[4].clusters is not after.clusters


def test_a_failed_decision_drops_what_was_kept(
    world: SimpleNamespace,
    submit: Callable[..., Job],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    submit(team="a", gpus=8, name="runs", at=later(0))
    waiting = submit(team="a", gpus=8, workers=2, name="waits", at=later(1))
    keep = SnapshotKeep()
    seen: list[engine.Snapshot] = []

    def failing(snapshot: engine.Snapshot, policy: str, *, state: EngineState) -> Any:
        seen.append(snapshot)
        if len(seen) == 2:
            raise RuntimeError("the engine failed")
        return engine_decide(snapshot, policy, state=state)

    monkeypatch.setattr("queues.services.cycle.decide", failing)
    run_cycle(now=later(10), keep=keep)
    with pytest.raises(RuntimeError):
        run_cycle(now=later(20), keep=keep)
    run_cycle(now=later(30), keep=keep)
    pending = [{j.name: j for j in s.pending}[str(waiting.pk)] for s in seen]
    assert pending[1] is pending[0]  # kept until the failure
    assert pending[2] is not pending[1]  # then the engine starts afresh

"""Replay a scenario in simulated time through the engine (docs/SCENARIOS.md).

    python -m gpusched.sim.simulate SCENARIO.yaml [--output REPORT.json] [--policy NAME]

Cycles run at every submit, finish, failure, release and job reaching its ``max_runtime``, plus
every ``cycle_interval`` while jobs wait and something changed since the last cycle: a stop or
shrink, or a job leaving its ``min_runtime`` or ``preemption_protection`` (it may now be
preempted). A periodic cycle on unchanged input would decide nothing new, so it is skipped and
not counted. The simulator alone measures wall time: ``engine_seconds``, inside ``run_cycle``.
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from itertools import filterfalse
from operator import attrgetter
from typing import Any

from gpusched.engine.cycle import run_cycle
from gpusched.engine.fairshare import decay_factor, decay_usage
from gpusched.engine.model import (
    AdmittedJob,
    Cluster,
    Cohort,
    CycleResult,
    Flavor,
    Node,
    PendingJob,
    Queue,
    Quota,
    Scale,
    ServiceClass,
    Snapshot,
    Topology,
)
from gpusched.engine.policies import Policy, get_policy
from gpusched.engine.state import EngineState
from gpusched.sim.report import ReportBuilder
from gpusched.sim.scenario import JobSpec, Scenario, ScenarioError

# event kinds, in the order they are applied at one instant
RELEASE, START, FINISH, NODE, CANCEL, SUBMIT, TIMER, TICK = range(8)


@dataclass(slots=True)
class SimJob:
    spec: JobSpec
    pending: PendingJob
    state: str = "waiting"  # waiting (not submitted), pending, starting, running, stopping, ...
    remaining: float | None = None  # work left; None: never ends
    run_start: float | None = None
    first_start: float | None = None
    ended_at: float | None = None
    cluster: str = ""
    flavor: str = ""
    placement: dict[str, int] = field(default_factory=dict)
    workers: int = 0
    start_at: float | None = None
    release_at: float | None = None
    held_for: str | None = None
    requeue: bool = True
    end_state: str = "failed"  # the state a stopping job ends in when not requeued
    preemptions: int = 0  # stops by the scheduler's rules (reclaim, fair share, priority)
    stops: int = 0  # every stop that requeued it (what the engine's AdmittedJob.stops counts)
    version: int = 0
    admitted: AdmittedJob | None = None  # cached snapshot view, rebuilt on change


_admitted_of = attrgetter("admitted")


def _pending_job(spec: JobSpec) -> PendingJob:
    topo = Topology(spec.topology.level, spec.topology.required) if spec.topology else None
    return PendingJob(
        name=spec.name,
        queue=spec.queue,
        service_class=spec.service_class,
        submitted_at=spec.submit_at,
        workers=spec.workers,
        gpus_per_worker=spec.gpus_per_worker,
        flavors=tuple(spec.flavors),
        min_workers=spec.min_workers,
        topology=topo,
        estimated_runtime=spec.estimated_runtime,
    )


class Simulator:
    """Replays a scenario. Subclasses may watch it: ``decided`` sees each cycle's result before
    it is applied; ``explain_pending`` asks the engine for each pending job's explanation.
    ``engine_state`` is what the engine keeps from one of this run's cycles to the next (a fresh
    ``EngineState`` unless one is given)."""

    def __init__(
        self,
        scenario: Scenario,
        policy: str | Policy = "default",
        *,
        explain_pending: bool = False,
        engine_state: EngineState | None = None,
    ) -> None:
        self.sc = scenario
        self.policy = get_policy(policy) if isinstance(policy, str) else policy
        self.explain_pending = explain_pending
        self.engine_state = engine_state if engine_state is not None else EngineState()
        self.flavors = tuple(
            Flavor(
                f.name,
                f.resource,
                f.gpu_equivalent,
                float(f.price_per_hour) if f.price_per_hour is not None else None,
            )
            for f in scenario.flavors
        )
        self.geq = {f.name: f.gpu_equivalent for f in scenario.flavors}
        self.classes = tuple(
            ServiceClass(
                c.name, c.priority, c.preemptible, c.can_borrow, c.min_runtime, c.grace_period,
                c.max_runtime, c.preemption_protection,
            )
            for c in scenario.service_classes
        )  # fmt: skip
        self.class_by_name = {c.name: c for c in self.classes}
        self.node_state: dict[tuple[str, str], dict[str, bool]] = {}
        self.node_cluster: dict[str, str] = {}
        for c in scenario.clusters:
            for n in c.nodes:
                self.node_state[(c.name, n.name)] = {
                    "failed": False, "cordoned": False, "draining": False
                }  # fmt: skip
                self.node_cluster.setdefault(n.name, c.name)
        self.clusters = self._build_clusters()
        self.decayed = {q.name: 0.0 for q in scenario.queues}  # in the scenario's order
        self.quotas = {
            q.name: {
                f: Quota(v.nominal, v.borrowing_limit, v.lending_limit) for f, v in q.quotas.items()
            }
            for q in scenario.queues
        }
        self.cohorts = tuple(
            Cohort(
                c.name,
                c.parent,
                {
                    f: Quota(v.nominal, v.borrowing_limit, v.lending_limit)
                    for f, v in c.quotas.items()
                },
                c.weight,
            )
            for c in scenario.cohorts
        )
        # a snapshot's queues: these fields, then the decayed usage (one list per field)
        self.queue_fields = tuple(
            zip(
                *(
                    (q.name, self.quotas[q.name], q.team, q.cohort, q.weight)
                    for q in scenario.queues
                ),
                strict=True,
            )
        )
        self.jobs = {j.name: SimJob(j, _pending_job(j)) for j in scenario.jobs}
        self.pending: dict[str, PendingJob] = {}  # the waiting jobs' snapshot views
        self.admitted: dict[str, SimJob] = {}
        self.heap: list[tuple[float, int, int, str, int]] = []
        self.seq = 0
        self.report = ReportBuilder(scenario, self.policy.name, self.geq)
        self.alloc: dict[str, float] = {q.name: 0.0 for q in scenario.queues}
        self.last_t = 0.0
        self.dirty = False
        self.last_reservation: tuple[object, ...] | None = None

    # -- setup -----------------------------------------------------------------------------
    def _build_clusters(self) -> tuple[Cluster, ...]:
        out = []
        for c in self.sc.clusters:
            nodes = []
            for n in c.nodes:
                st = self.node_state[(c.name, n.name)]
                nodes.append(
                    Node(
                        n.name,
                        dict(n.gpus),
                        dict(n.labels),
                        schedulable=not (st["failed"] or st["cordoned"]),
                        failed=st["failed"],
                        draining=st["draining"],
                    )
                )
            out.append(Cluster(c.name, tuple(nodes)))
        return tuple(out)

    def available_geq(self) -> float:
        total = 0.0
        for c in self.sc.clusters:
            for n in c.nodes:
                if not self.node_state[(c.name, n.name)]["failed"]:
                    total += sum(u * self.geq.get(f, 1.0) for f, u in n.gpus.items())
        return total

    def push(self, t: float, kind: int, name: str = "", version: int = 0) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, kind, self.seq, name, version))

    # -- accounting ------------------------------------------------------------------------
    def _set_alloc(self, job: SimJob, on: bool) -> None:
        units = sum(job.placement.values()) * self.geq.get(job.flavor, 1.0)
        self.alloc[job.spec.queue] += units if on else -units

    def advance(self, t: float) -> None:
        dt = t - self.last_t
        if dt > 0:
            decayed = self.decayed
            keep = decay_factor(dt, self.sc.half_life)
            for q, rate in self.alloc.items():
                decayed[q] = decay_usage(decayed[q], rate, dt, self.sc.half_life, keep)
            self.report.integrate(self.alloc, self.available, dt)
        self.last_t = t

    # -- job transitions -------------------------------------------------------------------
    def submit(self, job: SimJob) -> None:
        job.state = "pending"
        job.remaining = job.spec.duration
        self.pending[job.spec.name] = job.pending

    def start(self, job: SimJob, t: float) -> None:
        job.state = "running"
        job.run_start = t
        job.start_at = None
        if job.first_start is None:
            job.first_start = t
        job.version += 1
        job.admitted = None
        self._set_alloc(job, True)
        self.report.event(
            t,
            "admit",
            job=job.spec.name,
            queue=job.spec.queue,
            cluster=job.cluster,
            flavor=job.flavor,
            workers=job.workers,
            placement=dict(job.placement),
        )
        if job.remaining is not None:
            self.push(t + job.remaining, FINISH, job.spec.name, job.version)
        cls = self.class_by_name.get(job.spec.service_class)
        for protected in (cls.min_runtime, cls.preemption_protection) if cls is not None else ():
            if protected > 0:
                self.push(t + protected, TIMER)
        if cls is not None and cls.max_runtime is not None:
            self.push(t + cls.max_runtime, TIMER, "max-runtime")

    def release(self, job: SimJob, t: float) -> None:
        """GPUs of a stopping job come free; a preempted job goes back to pending."""
        self.admitted.pop(job.spec.name, None)
        if job.state == "stopping":
            self._set_alloc(job, False)
        job.placement = {}
        job.admitted = None
        job.version += 1
        if job.requeue and job.state == "stopping":
            job.state = "pending"
            self.pending[job.spec.name] = job.pending = replace(job.pending, stops=job.stops)
            self.report.event(t, "requeue", job=job.spec.name)
        elif job.state == "stopping":
            job.state = job.end_state
            job.ended_at = job.ended_at if job.ended_at is not None else t

    def stop(
        self, job: SimJob, t: float, reason: str, by: str | None, release_at: float, requeue: bool
    ) -> None:
        if job.state == "starting":  # a waiting preemptor lost a node: back to pending
            self.admitted.pop(job.spec.name, None)
            job.state, job.placement, job.admitted = "pending", {}, None
            job.version += 1
            self.pending[job.spec.name] = job.pending
            return
        if job.run_start is not None and job.remaining is not None:
            elapsed = t - job.run_start
            duration = job.spec.duration or 0.0
            done = duration - job.remaining + elapsed
            ci = job.spec.checkpoint_interval
            kept = math.floor(done / ci) * ci if ci else 0.0
            job.remaining = duration - min(kept, duration) if requeue else job.remaining - elapsed
        job.state = "stopping"
        job.requeue = requeue
        job.release_at = release_at
        job.held_for = by
        job.version += 1
        job.admitted = None
        if reason in ("reclaim", "fair-share", "priority"):
            job.preemptions += 1
        if requeue:
            job.stops += 1
        event: dict[str, Any] = {"job": job.spec.name, "reason": reason}
        if by is not None:
            event["by"] = by
        self.report.event(t, "preempt", **event)
        if not requeue:
            job.ended_at, job.end_state = t, "failed"
            self.report.event(t, "fail", job=job.spec.name, reason=reason)
        if release_at <= t:
            self.release(job, t)
        else:
            self.push(release_at, RELEASE, job.spec.name, job.version)

    # -- snapshot and decisions ------------------------------------------------------------
    def snapshot(self, t: float) -> Snapshot:
        queues = tuple(map(Queue, *self.queue_fields, self.decayed.values()))
        jobs = self.admitted.values()
        for job in list(filterfalse(_admitted_of, jobs)):  # changed since their last view
            job.admitted = AdmittedJob(
                name=job.spec.name,
                queue=job.spec.queue,
                service_class=job.spec.service_class,
                submitted_at=job.spec.submit_at,
                cluster=job.cluster,
                flavor=job.flavor,
                gpus_per_worker=job.spec.gpus_per_worker,
                workers=job.workers,
                placement=dict(job.placement),
                started_at=job.run_start if job.state in ("running", "stopping") else None,
                requested_workers=job.spec.workers,
                min_workers=job.spec.min_workers,
                topology=job.pending.topology,
                estimated_runtime=job.spec.estimated_runtime,
                start_at=job.start_at if job.state == "starting" else None,
                stopping=job.state == "stopping",
                release_at=job.release_at if job.state == "stopping" else None,
                held_for=job.held_for if job.state == "stopping" else None,
                stops=job.stops,
                checkpoint_interval=job.spec.checkpoint_interval,
            )
        return Snapshot(
            now=t,
            flavors=self.flavors,
            clusters=self.clusters,
            service_classes=self.classes,
            queues=queues,
            admitted=tuple(map(_admitted_of, jobs)),
            pending=tuple(self.pending.values()),
            topology_levels=self.sc.topology_levels,
            default_runtime=self.sc.default_runtime,
            half_life=self.sc.half_life,
            cohorts=self.cohorts,
        )

    def cycle(self, t: float) -> None:
        snap = self.snapshot(t)
        began = time.perf_counter()
        result = run_cycle(
            snap, self.policy, explain_pending=self.explain_pending, state=self.engine_state
        )
        seconds = time.perf_counter() - began
        self.report.cycle_time(seconds)
        # admissions alone leave nothing for a periodic cycle to add (work conservation);
        # stops and shrinks do: a preemptor may wait, victims come back
        self.dirty = bool(result.stops or result.scales)
        self.decided(result, t, seconds)
        self.apply(result, t)

    def decided(self, result: CycleResult, t: float, seconds: float) -> None:
        """Called with each cycle's result (``seconds`` in the engine) before it is applied."""

    def scale(self, sc: Scale, t: float) -> None:
        job = self.jobs[sc.job]
        self._set_alloc(job, False)
        job.placement = dict(sc.placement)
        job.workers = sc.workers
        self._set_alloc(job, True)
        job.admitted = None
        event: dict[str, Any] = {
            "job": sc.job,
            "workers": sc.workers,
            "placement": dict(sc.placement),
        }
        if sc.by is not None:
            event["by"] = sc.by
            event["reason"] = sc.reason
        self.report.event(t, "scale", **event)

    def apply(self, result: CycleResult, t: float) -> None:
        for sc in result.scales:
            if sc.by is not None:  # shrunk for a preemptor (possibly stopped below as well)
                self.scale(sc, t)
        for s in result.stops:
            self.stop(self.jobs[s.job], t, s.reason, s.by, s.release_at, s.requeue)
        for a in result.admits:
            del self.pending[a.job]
            job = self.jobs[a.job]
            job.cluster, job.flavor, job.workers = a.cluster, a.flavor, a.workers
            job.placement = dict(a.placement)
            self.admitted[a.job] = job
            if a.start_at <= t:
                self.start(job, t)
            else:
                job.state = "starting"
                job.start_at = a.start_at
                job.version += 1
                job.admitted = None
                self.push(a.start_at, START, a.job, job.version)
        for sc in result.scales:
            if sc.by is None:  # growth happens after the cycle's admissions
                self.scale(sc, t)
        # the cycle's reservations, all of them at once whenever they change (checker: a set)
        key = tuple((r.job, r.start, tuple(sorted(r.nodes.items()))) for r in result.reservations)
        for res in result.reservations if key and key != self.last_reservation else ():
            self.report.event(
                t, "reserve", job=res.job, start=res.start, cluster=res.cluster,
                flavor=res.flavor, nodes=dict(res.nodes),
            )  # fmt: skip
        self.last_reservation = key

    # -- the event loop --------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        for job in self.jobs.values():
            self.push(job.spec.submit_at, SUBMIT, job.spec.name)
        for ev in self.sc.events:
            if ev.node is not None:
                self.push(ev.at, NODE, f"{ev.node}\0{ev.action}")
            elif ev.job is not None:
                self.push(ev.at, CANCEL, ev.job)
        self.available = self.available_geq()
        self.last_t = min((j.spec.submit_at for j in self.jobs.values()), default=0.0)
        interval = self.sc.cycle_interval
        until = self.sc.until
        end = self.last_t
        next_tick: float | None = None
        while self.heap:
            t = self.heap[0][0]
            if until is not None and t > until:
                break
            self.advance(t)
            trigger = False
            tick = False
            while self.heap and self.heap[0][0] == t:
                _, kind, _, name, version = heapq.heappop(self.heap)
                if kind == TICK:
                    tick = True
                elif self.handle(kind, name, version, t):
                    trigger = True
            end = t
            if trigger or (tick and self.pending and self.dirty):
                self.cycle(t)
            if tick:
                next_tick = None
            # periodic cycles while jobs wait and the last cycle changed something
            if self.pending and self.dirty and interval > 0 and next_tick is None:
                next_tick = (math.floor(t / interval) + 1) * interval
                self.push(next_tick, TICK)
        if until is not None and (self.pending or self.admitted):
            end = max(end, until)
            self.advance(until)
        return self.report.build(self.jobs.values(), end)

    def handle(self, kind: int, name: str, version: int, t: float) -> bool:
        """Apply one event; True when it calls for a cycle."""
        if kind == SUBMIT:
            job = self.jobs[name]
            if job.state != "waiting":
                return False  # cancelled before it was submitted
            self.submit(job)
            return True
        if kind == TIMER:
            if name == "max-runtime":
                return True
            # min_runtime or preemption protection over: the job may now be preempted; that is
            # changed input for the next periodic cycle, unless an event-driven cycle looks first
            self.dirty = True
            return False
        if kind == NODE:
            node, action = name.split("\0")
            key = (self.node_cluster[node], node)
            st = self.node_state[key]
            if action == "fail":
                st["failed"] = True
            elif action == "recover":
                st["failed"] = False
            elif action == "cordon":
                st["cordoned"] = True
            elif action == "drain":  # cordoned, and its jobs stopped and requeued
                st["cordoned"] = st["draining"] = True
            elif action == "uncordon":  # ends a drain too, as kubectl uncordon
                st["cordoned"] = st["draining"] = False
            self.clusters = self._build_clusters()
            self.available = self.available_geq()
            self.report.event(t, "node", node=node, action=action)
            return True
        job = self.jobs[name]
        if kind == CANCEL:
            return self.cancel(job, t)
        if version != job.version:
            return False  # superseded (preempted, restarted, ...)
        if kind == FINISH and job.state == "running":
            self.admitted.pop(name, None)
            self._set_alloc(job, False)
            job.state, job.ended_at, job.remaining = "finished", t, 0.0
            job.placement, job.admitted = {}, None
            self.report.event(t, "finish", job=name)
            return True
        if kind == RELEASE and job.state == "stopping":
            self.release(job, t)
            return True
        if kind == START and job.state == "starting":
            self.start(job, t)
            return True
        return False

    def cancel(self, job: SimJob, t: float) -> bool:
        """A cancelled running job stops like a preempted one: GPUs free after its grace."""
        if job.state in ("finished", "failed", "cancelled"):
            return False
        if job.state == "stopping" and not job.requeue:
            return False  # already ending (failed or cancelled): its grace period just runs out
        self.report.event(t, "cancel", job=job.spec.name)
        job.end_state = "cancelled"
        if job.state == "running":
            cls = self.class_by_name.get(job.spec.service_class)
            grace = cls.grace_period if cls is not None else 0.0
            job.state, job.requeue, job.release_at, job.held_for = (
                "stopping",
                False,
                t + grace,
                None,
            )
            job.version += 1
            job.admitted = None
            if grace <= 0:
                self.release(job, t)
            else:
                self.push(t + grace, RELEASE, job.spec.name, job.version)
            job.ended_at = t
            return True
        if job.state == "stopping":
            job.requeue = False
            job.ended_at = t
            return True
        self.pending.pop(job.spec.name, None)
        self.admitted.pop(job.spec.name, None)
        job.state, job.ended_at, job.placement, job.admitted = "cancelled", t, {}, None
        job.version += 1
        return True


def simulate(scenario: Scenario, policy: str | Policy = "default") -> dict[str, Any]:
    """Replay ``scenario`` under ``policy`` and return the report of docs/SCENARIOS.md."""
    return Simulator(scenario, policy).run()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gpusched.sim.simulate",
        description="Replay a scenario through the scheduling engine and print a JSON report.",
    )
    parser.add_argument("scenario", help="scenario YAML file (docs/SCENARIOS.md)")
    parser.add_argument("--output", help="write the report here instead of stdout")
    parser.add_argument("--policy", default="default", help="default, fifo or greedy")
    args = parser.parse_args(argv)
    return run_command(args.scenario, args.output, args.policy, sys.stdout, sys.stderr)


def run_command(path: str, output: str | None, policy: str, out: Any, err: Any) -> int:
    """Shared by the module CLI and the Django command: load, simulate, write; 0 on success."""
    from gpusched.sim.scenario import load_scenario

    try:
        get_policy(policy)
        scenario = load_scenario(path)
    except (ScenarioError, ValueError) as exc:
        err.write(f"error: {exc}\n")
        return 2
    report = simulate(scenario, policy)
    text = json.dumps(report, indent=2)
    if output:
        try:
            with open(output, "w", encoding="utf-8") as handle:
                handle.write(text + "\n")
        except OSError as exc:
            err.write(f"error: cannot write {output}: {exc.strerror or exc}\n")
            return 1
    else:
        out.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The sentences of the job timeline (``JobEvent.message``), from plain values.

``queues.services.events`` puts them in the events the live services and the demo's history
replay (``demo.history``) write, so a replayed month reads exactly like a live one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime

from gpusched.engine.explain import PendingInfo

SUCCEEDED = "All workers finished successfully."


def when(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def clock(moment: datetime) -> str:
    return f"{moment:%Y-%m-%d %H:%M:%S} UTC"


def submitted(
    queue: str,
    owner: str,
    workers: int,
    gpus_per_worker: int,
    flavors: Sequence[str],
    service_class: str,
) -> str:
    size = f"{workers} worker(s) x {gpus_per_worker} {' or '.join(flavors)}"
    return f"Submitted to queue {queue} by {owner}: {size}, class {service_class}."


def admitted(
    *,
    cluster: str,
    flavor: str,
    placement: Mapping[str, int],  # node -> units
    workers: int,
    queue: str,
    borrowing: bool,
    cohort: str | None,
    start: datetime,
    now: datetime,
) -> str:
    where = ", ".join(f"{node} ({units} {flavor})" for node, units in sorted(placement.items()))
    total = sum(placement.values())
    if borrowing:
        lender = cohort or "its cohort"
        quota = f"borrowing above queue {queue}'s nominal quota from cohort {lender}"
    else:
        quota = f"within queue {queue}'s nominal quota"
    text = (
        f"Admitted to cluster {cluster} on {where}: {workers} worker(s), "
        f"{total} {flavor} in all, {quota}."
    )
    if start > now:
        text += f" Starts at {clock(start)}, when the preempted jobs' grace period ends."
    return text


def stopped(
    reason: str,
    *,
    now: datetime,
    release: datetime,
    by: str,
    their_queue: str,
    mine: str,
    preemptor_class: tuple[str, int] | None = None,  # (name, priority)
    failed_nodes: Sequence[str] = (),
    service_class: str = "",
    max_runtime: int | None = None,
) -> str:
    """Why the engine stopped a job (``by``: the preemptor's label)."""
    if release > now:
        grace = seconds((release - now).total_seconds())
        tail = (
            f" It stops with a {grace} grace period (until {clock(release)}), then goes "
            "back to the queue with its original submission time."
        )
    else:
        tail = " It goes back to the queue with its original submission time."
    if reason == "reclaim":
        return (
            f"Preempted by {by} of queue {their_queue}, which reclaims its nominal quota: "
            f"queue {mine} was borrowing above its nominal quota." + tail
        )
    if reason == "fair-share":
        return (
            f"Preempted by {by} of queue {their_queue} under fair sharing: queue {mine} "
            "held a larger share of the cohort's borrowed GPUs." + tail
        )
    if reason == "priority":
        level = ""
        if preemptor_class is not None:
            level = f" (class {preemptor_class[0]}, priority {preemptor_class[1]})"
        return f"Preempted by higher-priority {by}{level} of the same queue." + tail
    if reason == "node-failure":
        nodes = ", ".join(failed_nodes) or "of this job"
        if release > now:
            return f"Node {nodes} failed: the whole gang is stopped." + tail
        return (
            f"Node {nodes} failed: the whole gang is stopped "
            "and requeued with its original submission time."
        )
    if reason == "node-drain":
        nodes = ", ".join(failed_nodes) or "of this job"
        return f"Node {nodes} is being drained by an admin: the whole gang is stopped." + tail
    if reason == "max-runtime":
        return (
            f"Ran longer than the maximum runtime of class {service_class} "
            f"({max_runtime} s): stopped and marked failed."
        )
    return f"Stopped ({reason})." + tail


def scaled(before: int, workers: int, by: str, reason: str | None) -> str:
    if reason == "grow":
        return f"Grew from {before} to {workers} workers into idle GPUs."
    return f"Shrunk from {before} to {workers} workers for {by} ({reason})."


def started(workers: int, nodes: Sequence[str]) -> str:
    return f"All {workers} worker(s) running on {', '.join(nodes)}."


def worker_detail(index: int, node: str, message: str) -> str:
    """One failed worker, as a worker failure's message names it."""
    return f"worker {index} on {node or 'an unknown node'}: {message or 'failed'}"


def worker_failure(detail: str, failures: int, limit: int) -> str:
    """A worker failed: the gang is requeued, or failed once ``failures`` reaches ``limit``."""
    if failures >= limit:
        return (
            f"A worker failed ({detail}). The job failed {failures} times, the limit, so it is "
            "not restarted."
        )
    return (
        f"A worker failed ({detail}): the whole gang was stopped and requeued with its "
        f"original submission time (failure {failures} of at most {limit})."
    )


def seconds(value: float) -> str:
    """A wall-clock duration in seconds as a person reads it: "30 s", "0.5 s"."""
    return f"{round(value, 1):g} s"


def cancelled(by: str, *, release: datetime | None, grace: float, stopping: bool) -> str:
    """Cancelled by ``by``: holding GPUs (they are free at ``release``, after ``grace``
    seconds), already ``stopping`` (preempted), or else before it started."""
    if release is not None:
        return (
            f"Cancelled by {by}: its workers stop with a {seconds(grace)} grace period "
            f"(GPUs free at {release:%Y-%m-%d %H:%M:%S} UTC)."
        )
    if stopping:
        return f"Cancelled by {by} while it was being preempted."
    return f"Cancelled by {by} before it started."


def rejected(reason: str) -> str:
    return f"The cluster rejected the job, so it cannot start: {reason}"


def sentence(text: str) -> str:
    """``text`` as a sentence: capitalised, with a full stop."""
    text = text.strip()
    text = text[:1].upper() + text[1:]
    return text if text.endswith(".") else text + "."


def quota_refused(message: str) -> str:
    """Why a gang was requeued when the cluster's ResourceQuota refused one of its workers."""
    return f"The cluster refused a worker for lack of quota ({message})"


def gang_requeued(cause: str, *, until: datetime, backoff: int, requeues: int) -> str:
    """Workers missing, lost or refused (``cause``): the gang stopped whole, requeued with
    backoff until ``until``."""
    return (
        f"{sentence(cause)} A gang runs whole or not at all: its workers were stopped and it "
        "was requeued with its original submission time; it may be admitted again from "
        f"{clock(until)} (backoff {backoff} s, gang requeue {requeues})."
    )


def gang_backoff(until: datetime, backoff: int) -> str:
    """The pending explanation of a gang waiting out its requeue backoff."""
    return (
        "Requeued after its gang could not run whole: it may be admitted again from "
        f"{clock(until)} (backoff {backoff} s)."
    )


def gang_shrunk(cause: str, workers: int, requested: int, minimum: int, until: datetime) -> str:
    """An elastic job lost workers (``cause``) and goes on with ``workers`` of them."""
    return (
        f"{sentence(cause)} The job goes on with {workers} of its {requested} workers "
        f"(its minimum is {minimum}); it may grow again from {clock(until)}."
    )


def back_in_queue(submitted_at: datetime) -> str:
    return (
        "Back in the queue after its preemption, with its original submission time "
        f"({submitted_at:%Y-%m-%d %H:%M:%S} UTC)."
    )


def pending(info: PendingInfo, label: Callable[[str], str]) -> tuple[str, datetime | None]:
    """The engine's sentence with job labels and a wall-clock estimated start."""
    if info.blocker or info.estimated_start is not None:  # (copying 5,000 infos is slow)
        blocker = label(info.blocker) if info.blocker else ""
        info_in_words = dataclasses.replace(info, estimated_start=None, blocker=blocker)
    else:
        info_in_words = info
    message = info_in_words.message
    estimate = None
    if info.estimated_start is not None:
        estimate = when(info.estimated_start)
        message += f" Estimated start: {clock(estimate)}."
    return message, estimate


# --- kubectl-applied workloads taken in (queues/services/intake.py, docs/KUEUE.md) -------------
def workload_taken_in(workload: str, queue_label: str, owner: str, owner_from: str) -> str:
    return (
        f"Taken in from {workload}, applied suspended with {queue_label}; owner {owner} "
        f"({owner_from})."
    )


def workload_unsuspended(workload: str, nodes: Sequence[str]) -> str:
    return (
        f"Unsuspended {workload} on {', '.join(nodes)}: its pod templates require those nodes "
        "(node affinity on kubernetes.io/hostname) and carry the platform's labels."
    )


def workload_suspended(workload: str) -> str:
    return f"Suspended {workload}: its controller deletes its pods."


def workload_restored(workload: str) -> str:
    return (
        f"Restored the pod templates of {workload} as applied (the node affinity and labels the "
        "platform had injected are removed)."
    )


def workload_deleted(workload: str) -> str:
    return f"the deletion of {workload} from the cluster"

"""Kueue-compatible intake, the database side (docs/KUEUE.md): kubectl-applied Jobs, JobSets and
PyTorchJobs with a queue label become platform jobs, through the same submission rules as the
form and the API (``submit_job``); what the platform then does to them is in their timeline.

Called from the cycle's observe step (``observe.sync_clusters``) with what the cluster's driver
listed (``list_adopted``):

- a new suspended workload in a team's namespace (``team-<team>``), naming one of the team's
  queues, becomes a pending job (owner: the ``gpuplatform/owner`` annotation, else the team's
  first admin; class: the ``gpuplatform/service-class`` annotation or Kueue's
  ``kueue.x-k8s.io/priority-class`` label, else the queue's lowest-priority class) with a
  ``WorkloadReference`` to it; the object's condition says it is queued;
- one that cannot be taken in (not suspended, an unknown queue, larger than any cluster, any
  rule of queues/models/job_rules.py) gets a Warning Event and a condition saying why, once:
  the condition already saying so is not sent again;
- one whose job waits again after a stop gets its pod templates back as applied, and is
  suspended again if someone unsuspended it while its job does not hold GPUs;
- one deleted from the cluster cancels its job.

Effects on the object (``carry_out``, from effects.py): a launch unsuspends it pinned to the
planned nodes, a stop suspends it (its controller deletes the pods).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Q

from queues.clusters import adopted, manifests
from queues.clusters.adopted import AdoptedWorkload, ObjectRef, Refusal
from queues.clusters.base import ClusterUnavailable, DriverError, FlavorDefinition
from queues.clusters.factory import get_driver
from queues.models import (
    Cluster,
    Flavor,
    IllegalTransition,
    Job,
    Membership,
    Queue,
    ServiceClass,
    Team,
    WorkloadReference,
)
from queues.services import events as job_events
from queues.services import messages
from queues.services.jobs import cancel_job, cycles_run_by_caller, submit_job
from queues.services.report import CycleReport

logger = logging.getLogger(__name__)

QUEUED = "Queued"  # the condition's reasons while it waits, runs, or was stopped
ADMITTED = "Admitted"
SUSPENDED = "Suspended"
# a job in these states waits or has ended without its object running: templates go back
RESTORE_STATES = (Job.State.PENDING, Job.State.CANCELLED, Job.State.FAILED)


@dataclass(frozen=True)
class Tell:
    """Set the object's condition (and an Event) to this, after the sync's transaction."""

    obj: dict[str, Any]
    reason: str
    message: str
    status: str = "False"
    warning: bool = True  # a refusal; being queued is Normal


@dataclass(frozen=True)
class Restore:
    """Put the object's pod templates back as applied (its job waits again)."""

    job_id: int
    ref: ObjectRef
    templates: dict[str, Any]


@dataclass(frozen=True)
class Resuspend:
    """Suspend the object again: someone unsuspended it while its job does not hold GPUs (as
    Kueue does, the platform alone decides when it runs)."""

    job_id: int
    ref: ObjectRef


Note = Tell | Restore | Resuspend


def list_workloads(driver: Any) -> adopted.Listing | None:
    """What the driver lists; None for a driver that takes no kubectl workloads in (the
    simulated cluster has no kubectl users)."""
    lister = getattr(driver, "list_adopted", None)
    return None if lister is None else lister()  # type: ignore[no-any-return]


def reference(row: WorkloadReference) -> ObjectRef:
    return ObjectRef(row.kind, row.api_version, row.namespace, row.name, row.uid)


def take_in(
    cluster: Cluster, listing: adopted.Listing, now: datetime, report: CycleReport
) -> list[Note]:
    """Bring the database up to the cluster's kubectl workloads; returns what to tell them."""
    listed = [adopted.ref_of(obj).uid for obj in listing.objects]
    rows = WorkloadReference.objects.filter(cluster=cluster).filter(
        Q(uid__in=listed) | ~Q(job__state__in=Job.TERMINAL_STATES)  # listed, or may be gone
    )
    known = {row.uid: row for row in rows.select_related("job__queue__team", "job__owner")}
    teams = {manifests.team_namespace(team.name): team for team in Team.objects.all()}
    flavors = list(Flavor.objects.all())
    notes: list[Note] = []
    seen: set[str] = set()
    for obj in listing.objects:
        ref = adopted.ref_of(obj)
        seen.add(ref.uid)
        row = known.get(ref.uid)
        if row is not None:
            if row.job.state not in RESTORE_STATES:
                continue
            if not adopted.suspended(obj):
                notes.append(Resuspend(row.job_id, ref))
            elif adopted.injected_job(obj) == str(row.job_id):
                notes.append(Restore(row.job_id, ref, dict(row.templates)))
            continue
        outcome = _adopt(cluster, obj, teams, flavors, now, report)
        if isinstance(outcome, Refusal):
            note = Tell(obj, outcome.reason, outcome.message)
            if _news(note, now):  # else told already: not again, not in the report either
                report.add("refused", f"{ref}: {outcome.message}")
                notes.append(note)
        else:
            text = f"Queued as job #{outcome.pk} in queue {outcome.queue}."
            notes.append(Tell(obj, QUEUED, text, warning=False))
    for uid, row in known.items():
        if uid not in seen and row.kind in listing.kinds and not row.job.is_finished:
            _deleted(row, now)
    return notes


def _adopt(
    cluster: Cluster,
    obj: dict[str, Any],
    teams: dict[str, Team],
    flavors: list[Flavor],
    now: datetime,
    report: CycleReport,
) -> Job | Refusal:
    parsed = adopted.parse(obj)
    if isinstance(parsed, Refusal):
        return parsed
    ref = parsed.ref
    team = teams.get(ref.namespace)
    if team is None:
        return Refusal(
            "UnknownNamespace",
            f"namespace {ref.namespace} belongs to no team: the platform takes in workloads "
            "from its teams' namespaces (team-<team>)",
        )
    queue = Queue.objects.filter(team=team, name=parsed.queue).select_related("team").first()
    if queue is None:
        names = ", ".join(team.queues.order_by("name").values_list("name", flat=True)) or "none"
        return Refusal(
            "UnknownQueue", f"team {team.name} has no queue {parsed.queue!r}; its queues: {names}"
        )
    owner = _owner(team, parsed)
    if isinstance(owner, Refusal):
        return owner
    service_class = _service_class(queue, parsed)
    if isinstance(service_class, Refusal):
        return service_class
    chosen = _flavors(queue, parsed, flavors)
    if isinstance(chosen, Refusal):
        return chosen
    try:
        with cycles_run_by_caller(), transaction.atomic():  # this very cycle considers it
            job = submit_job(
                owner=owner[0],
                queue=queue,
                service_class=service_class,
                name=ref.name,
                image=parsed.image,
                flavors=chosen,
                workers=parsed.gang_size,
                gpus_per_worker=parsed.gpus_per_worker,
                command=parsed.command,
                now=now,
            )
            WorkloadReference.objects.create(
                job=job,
                cluster=cluster,
                kind=ref.kind,
                api_version=ref.api_version,
                namespace=ref.namespace,
                name=ref.name,
                uid=ref.uid,
                labels=dict(parsed.labels),
                templates=adopted.originals(obj),
            )
            said = job_events.workload_taken_in(
                workload=str(ref),
                queue_label=_queue_label(parsed),
                owner=owner[0].username,
                owner_from=owner[1],
            )
            job_events.recorded(job, said, now, report).save()
    except ValidationError as error:
        problems = [
            f"{field}: {text}" for field, texts in error.message_dict.items() for text in texts
        ]
        return Refusal("SubmissionRefused", "; ".join(problems))
    return job


def _queue_label(parsed: AdoptedWorkload) -> str:
    key = next(k for k in adopted.QUEUE_LABELS if parsed.labels.get(k))
    return f"{key}={parsed.queue}"


def _owner(team: Team, parsed: AdoptedWorkload) -> tuple[User, str] | Refusal:
    """The annotation's user (a member of the team), else the team's first admin (the
    earliest made team admin), else its first member."""
    members = Membership.objects.filter(team=team).select_related("user").order_by("pk")
    if parsed.owner:
        found = members.filter(user__username=parsed.owner).first()
        if found is None:
            return Refusal(
                "UnknownOwner",
                f"{adopted.OWNER_ANNOTATION}: {parsed.owner!r} is not a member of team {team.name}",
            )
        return found.user, f"annotation {adopted.OWNER_ANNOTATION}"
    first = members.filter(role=Membership.Role.TEAM_ADMIN).first() or members.first()
    if first is None:
        return Refusal(
            "UnknownOwner",
            f"team {team.name} has no member to own the job; set {adopted.OWNER_ANNOTATION}",
        )
    return first.user, f"the team's default owner, its first {first.get_role_display().lower()}"


def _service_class(queue: Queue, parsed: AdoptedWorkload) -> ServiceClass | Refusal:
    """The named class, else the queue's default: the lowest-priority class it accepts."""
    if parsed.service_class:
        found = ServiceClass.objects.filter(name=parsed.service_class).first()
        if found is None:
            names = ", ".join(ServiceClass.objects.order_by("name").values_list("name", flat=True))
            return Refusal(
                "UnknownServiceClass",
                f"service class {parsed.service_class!r} does not exist; classes: {names}",
            )
        return found  # whether the queue accepts it: the submission rules say
    allowed = queue.allowed_service_classes.all()
    pool = allowed if allowed.exists() else ServiceClass.objects.all()
    default = pool.order_by("priority", "name").first()
    if default is None:
        return Refusal("UnknownServiceClass", "the platform has no service class yet")
    return default


def _flavors(
    queue: Queue, parsed: AdoptedWorkload, flavors: list[Flavor]
) -> list[Flavor] | Refusal:
    """The flavors that could serve it, those the queue has a quota for first (none of them:
    every match, and the submission rules name the missing quota)."""
    by_name = {f.name: f for f in flavors}
    definitions = [FlavorDefinition(f.name, f.resource, dict(f.node_selector)) for f in flavors]
    matches = [by_name[d.name] for d in adopted.matching_flavors(parsed, definitions)]
    if not matches:
        if parsed.flavor:
            return Refusal(
                "NoFlavor", f"{adopted.FLAVOR_ANNOTATION}: flavor {parsed.flavor!r} does not exist"
            )
        product = f" on {parsed.gpu_product}" if parsed.gpu_product else ""
        return Refusal(
            "NoFlavor", f"no flavor of the platform offers {parsed.resource_name}{product}"
        )
    quota = set(queue.quotas.values_list("flavor_id", flat=True))
    with_quota = [f for f in matches if f.pk in quota]
    return with_quota or matches


def _deleted(row: WorkloadReference, now: datetime) -> None:
    """Its object was deleted from the cluster: the job is cancelled."""
    job = row.job
    try:
        cancel_job(job, job.owner, now=now, by=messages.workload_deleted(str(reference(row))))
    except (PermissionDenied, IllegalTransition) as error:
        logger.warning("job %s: its workload is gone but it was not cancelled: %s", job.pk, error)


def tell(cluster: Cluster, notes: list[Note], now: datetime) -> None:
    """Set the conditions, send the Events and restore the templates the intake asked for.
    A failure is logged; the next cycle finds the same notes again (they are idempotent)."""
    notes = [n for n in notes if not isinstance(n, Tell) or _news(n, now)]
    if not notes:
        return
    try:
        driver = get_driver(cluster, now=now)
    except DriverError as error:
        logger.warning("cluster %s: cannot tell its workloads: %s", cluster.name, error)
        return
    try:
        for note in notes:
            try:
                _tell_one(driver, note, now)
            except ClusterUnavailable as error:
                logger.warning("cluster %s: %s", cluster.name, error)
                return
            except DriverError as error:
                logger.warning("cluster %s: %s", cluster.name, error)
    finally:
        driver.close()


def _news(note: Tell, now: datetime) -> bool:
    """Whether the object's condition does not say this yet (else: told already, not again)."""
    patch = adopted.condition_patch(
        note.obj, status=note.status, reason=note.reason, message=note.message, at=now
    )
    return bool(patch)


def _tell_one(driver: Any, note: Note, now: datetime) -> None:
    if isinstance(note, Tell):
        driver.report_adopted(
            note.obj,
            status=note.status,
            reason=note.reason,
            message=note.message,
            at=now,
            warning=note.warning,
        )
    elif isinstance(note, Resuspend):
        if driver.suspend_adopted(note.ref):
            said = job_events.workload_suspended(workload=str(note.ref))
            said.row(note.job_id, now).save()
    elif driver.restore_adopted(note.ref, note.templates):
        said = job_events.workload_restored(workload=str(note.ref))
        said.row(note.job_id, now).save()


# -- effects on the object (effects.py) -------------------------------------------------------


def carry_out(driver: Any, action: str, job: Job, row: WorkloadReference, now: datetime) -> None:
    """A launch unsuspends the object on the planned nodes; a stop suspends it (not a job that
    succeeded: its object completed on its own). Scale: adopted jobs are not elastic."""
    ref = reference(row)
    if action == "launch" and getattr(driver, "admit_adopted", None) is not None:
        runtime = job.runtime
        nodes = sorted({str(node) for _, node in runtime.worker_nodes})
        if job.state not in (Job.State.ADMITTED, Job.State.RUNNING) or not nodes:
            return
        flavor = runtime.flavor.name if runtime.flavor is not None else ""
        if driver.admit_adopted(ref, str(job.pk), _labels(job, flavor), nodes):
            said = job_events.workload_unsuspended(workload=str(ref), nodes=nodes)
            said.row(job, now).save()
        text = f"Admitted as job #{job.pk} on {', '.join(nodes)}."
        driver.report_adopted(ref, status="True", reason=ADMITTED, message=text, at=now)
    elif action == "stop" and getattr(driver, "suspend_adopted", None) is not None:
        if job.state == Job.State.SUCCEEDED:
            return
        if driver.suspend_adopted(ref):
            said = job_events.workload_suspended(workload=str(ref))
            said.row(job, now).save()
            text = f"Suspended: job #{job.pk} is {job.get_state_display().lower()}."
            driver.report_adopted(ref, status="False", reason=SUSPENDED, message=text, at=now)


def _labels(job: Job, flavor: str) -> dict[str, str]:
    """The platform's labels on the pods of an adopted workload (as on its own pods)."""
    labels = {
        manifests.MANAGED_BY_KEY: manifests.MANAGED_BY,
        manifests.JOB_LABEL: manifests.label_value(str(job.pk)),
        manifests.QUEUE_LABEL: manifests.label_value(job.queue.name),
        manifests.TEAM_LABEL: manifests.label_value(job.queue.team.name),
        manifests.SERVICE_CLASS_LABEL: manifests.label_value(job.service_class.name),
    }
    if flavor:
        labels[manifests.FLAVOR_LABEL] = manifests.label_value(flavor)
    return labels

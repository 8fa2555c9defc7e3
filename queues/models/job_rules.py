"""The rules of a job submission, each in one place.

``check_submission(user, submission)`` decides whether a job may be submitted. Everything that
creates or estimates a job calls it: ``submit_job`` (which the submit form and ``POST
/api/v1/jobs/`` call), ``estimate_submission`` (the form's estimate and ``POST
/api/v1/jobs/estimate/``) and the submit form's ``clean`` (so that a page shows every error at
once). ``Job.clean`` calls the part about the job's own fields. The callers only parse their input
into a ``Submission`` (the form: minutes into seconds, its flavor and fallbacks into one list; the
API: JSON) and show the errors where their user sees them: the rules and their messages are here.

Each error names the field (``queue``, ``flavors``, ``workers``...; an error about one flavor also
says which one in the list). The rules:

- queue: one the user may submit to (their team's; any for platform admins), and open;
- service_class: one the queue accepts;
- flavors: one to ``MAX_FLAVORS``, each once, each one the queue has a quota for;
- name: a DNS label; image: at most 500 characters; both needed, except for an estimate;
- command: a list of at most ``MAX_COMMAND_ITEMS`` strings of at most ``MAX_COMMAND_ITEM``
  characters, without NUL;
- workers: 1 to ``MAX_WORKERS``; gpus_per_worker: 1 to ``MAX_GPUS_PER_WORKER``; min_workers
  (elastic): empty, or 1 to workers;
- topology: a level and a mode (required or preferred), or neither;
- estimated_runtime, checkpoint_interval, duration_hint: empty, or 1 to ``MAX_INT`` seconds;
- the job's spec (env, volumes, shm_size, cpu, memory, tolerations, labels...) and its pod
  template: queues/models/job_spec.py and pod_template.py say the rules, named by their path
  (``env[0].name``, ``pod_template.spec.volumes[0].hostPath``); a template's image and command
  count as the submission's;
- the job could ever run: for at least one acceptable flavor, a node holds one worker, one
  cluster holds the job at its smallest size (an elastic job's min_workers) and the queue's quota
  could ever give it that much. These are the engine's never-reasons (gpusched/engine/explain.py
  NO_FLAVOR, TOO_LARGE, QUOTA_EXCEEDED): the quota test is the engine's own
  (``QuotaState.never_fits``: nominal, plus what the class may borrow, up to the borrowing limit
  and the most its cohort could get through the cohort tree: every cohort's limit up to the
  root, docs/SCHEDULING.md section 2a). Every node counts, cordoned or not ready ones too: those
  come back.

What the rules check against (the queue's classes and quotas, the cohort tree's quotas, the
capacity per flavor) is read from the catalog (queues/models/catalog.py: cached until it
changes); who the user is (groups, teams) once per request (gpuplatform/roles.py).
``check_submission`` returns a ``Checked`` that ``submit_job`` accepts instead of checking again.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError

from gpusched.engine import model as engine
from gpusched.engine.quota import QuotaState, QuotaStatics
from queues.models import catalog, job_spec, pod_template
from queues.models.organisation import CohortQuota, Queue, Quota
from queues.models.resources import Flavor, ServiceClass
from queues.models.validators import dns_label

if TYPE_CHECKING:
    from queues.models.jobs import Job

MAX_INT = 2**31 - 1  # the largest PostgreSQL integer (gpuplatform.rest.MAX_INT)
MAX_WORKERS = 100_000
MAX_GPUS_PER_WORKER = 10_000
MAX_FLAVORS = 20
MAX_COMMAND_ITEMS = 256
MAX_COMMAND_ITEM = 4096
MAX_NAME = 63
MAX_IMAGE = 500
TOPOLOGY_MODES = ("required", "preferred")
SECONDS = {
    "estimated_runtime": "The estimated runtime",
    "checkpoint_interval": "The checkpoint interval",
    "duration_hint": "The duration hint",
}


@dataclass(frozen=True)
class Submission:
    """What a submission says, parsed. ``None``: not given, or it did not parse (the caller has
    said so): the rules about it wait. Times are in seconds."""

    queue: Queue | None = None
    service_class: ServiceClass | None = None
    flavors: Sequence[Flavor] | None = None
    name: str | None = ""
    image: str | None = ""
    command: Sequence[str] | None = ()
    workers: int | None = 1
    gpus_per_worker: int | None = 1
    min_workers: int | None = None
    topology_level: str | None = ""
    topology_mode: str | None = ""
    estimated_runtime: int | None = None
    checkpoint_interval: int | None = None
    duration_hint: int | None = None
    # the job's spec (queues/models/job_spec.py: env, volumes, shm_size, cpu...) by key, and a
    # Kubernetes pod template folded into image, command and spec (queues/models/pod_template.py)
    spec: Mapping[str, Any] | None = None
    pod_template: Any = None

    def as_kwargs(self) -> dict[str, Any]:
        """The fields by name (``submit_job(owner=..., **submission.as_kwargs())``)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @property
    def elastic(self) -> bool:
        return self.min_workers is not None and self.min_workers < (self.workers or 0)


@dataclass(frozen=True)
class Problem:
    """One error: the field it is about, the message, and for an error about one acceptable
    flavor its index in ``Submission.flavors`` (the form shows it beside that flavor's field)."""

    field: str
    message: str
    flavor: int | None = None


class InvalidSubmission(ValidationError):
    """A ValidationError by field (``message_dict``) that keeps its ``problems``."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = tuple(problems)
        by_field: dict[str, list[str]] = defaultdict(list)
        for problem in self.problems:
            by_field[problem.field].append(problem.message)
        super().__init__(dict(by_field))


class _Found:
    def __init__(self, unparsed: Collection[str], known: catalog.Catalog | None = None) -> None:
        self.problems: list[Problem] = []
        self.unparsed = set(unparsed)
        self._catalog = known

    @property
    def catalog(self) -> catalog.Catalog:
        """What the rules check against (queues/models/catalog.py), read when first needed."""
        if self._catalog is None:
            self._catalog = catalog.current()
        return self._catalog

    def add(self, field: str, message: str, flavor: int | None = None) -> None:
        self.problems.append(Problem(field, message, flavor))

    def bad(self, *names: str) -> bool:
        """Whether any of these fields did not parse or broke a rule already."""
        wrong = self.unparsed | {p.field for p in self.problems}
        return any(name in wrong for name in names)


def problems(
    user: Any,
    submission: Submission,
    *,
    estimate: bool = False,
    unparsed: Collection[str] = (),
    known: catalog.Catalog | None = None,
) -> list[Problem]:
    """Every rule ``submission`` breaks for ``user``, in field order. ``estimate``: the name and
    image may be empty. ``unparsed``: fields whose input did not parse (their rules wait).
    ``known``: the catalog the caller has read already (default: ``catalog.current()``)."""
    found = _Found(unparsed, known)
    submission = _spec(found, submission)
    _queue(found, user, submission, adding=True)
    _text(found, submission, estimate)
    _command(found, submission.command)
    _size(found, submission)
    _topology(found, submission)
    _seconds(found, submission)
    _flavors(found, submission)
    _fits(found, submission)
    return found.problems


@dataclass(frozen=True)
class Checked:
    """What ``check_submission`` said yes to: ``submit_job`` given it for the same user and
    submission does not check the rules a second time."""

    user_pk: Any
    submission: Submission

    def covers(self, user: Any, submission: Submission) -> bool:
        return self.user_pk == getattr(user, "pk", None) and self.submission == submission


def check_submission(
    user: Any,
    submission: Submission,
    *,
    estimate: bool = False,
    known: catalog.Catalog | None = None,
) -> Checked:
    """Raise ``InvalidSubmission`` (a ValidationError by field) unless ``user`` may submit it."""
    found = problems(user, submission, estimate=estimate, known=known)
    if found:
        raise InvalidSubmission(found)
    return Checked(getattr(user, "pk", None), submission)


def resolved(submission: Submission) -> Submission:
    """``submission`` with its pod template folded into its image, command and spec, and its
    spec normalized (what ``submit_job`` stores, once ``check_submission`` said yes)."""
    spec = pod_template.resolve(
        submission.image,
        submission.command,
        submission.spec,
        submission.pod_template,
        submission.service_class,
    )
    return replace(
        submission, image=spec.image, command=spec.command, spec=spec.spec, pod_template=None
    )


def check_job_fields(job: Job) -> None:
    """``Job.clean``: the rules about the job's own fields (its name and image are checked by
    their model fields; a job in the database has its flavors apart)."""
    found = _Found(())
    submission = Submission(
        queue=job.queue if job.queue_id is not None else None,
        service_class=job.service_class if job.service_class_id is not None else None,
        name=None,
        image=None,
        command=job.command,
        workers=job.workers,
        gpus_per_worker=job.gpus_per_worker,
        min_workers=job.min_workers,
        topology_level=job.topology_level,
        topology_mode=job.topology_mode,
        estimated_runtime=job.estimated_runtime,
        checkpoint_interval=job.checkpoint_interval,
        duration_hint=job.duration_hint,
    )
    _queue(found, None, submission, adding=job._state.adding)
    for name, message in job_spec.clean(job.spec, submission.service_class).problems:
        found.add(name, message)
    _command(found, submission.command)
    _size(found, submission)
    _topology(found, submission)
    _seconds(found, submission)
    if found.problems:
        raise InvalidSubmission(found.problems)


def check_flavor_list(flavors: Sequence[Flavor]) -> None:
    """``Job.set_acceptable_flavors``: at least one, at most MAX_FLAVORS, each once."""
    found = _Found(())
    _flavor_list(found, flavors)
    if found.problems:
        raise InvalidSubmission(found.problems)


# --- The rules, by field ---------------------------------------------------------------------


def _queue(found: _Found, user: Any, s: Submission, *, adding: bool) -> None:
    queue = s.queue
    if queue is None:
        return
    if user is not None and not queue.takes_jobs_from(user):
        found.add(
            "queue",
            f"Queue {queue} is closed to new jobs."
            if not queue.is_open
            else f"You may not submit to queue {queue}: it belongs to another team.",
        )
        return
    if user is None and adding and not queue.is_open:
        found.add("queue", f"Queue {queue} is closed to new jobs.")
    if s.service_class is not None and not found.catalog.accepts(queue, s.service_class):
        accepted = ", ".join(found.catalog.accepted_names(queue))
        found.add(
            "service_class",
            f"Queue {queue} does not accept the {s.service_class.name!r} class; "
            f"it accepts: {accepted}.",
        )


def _spec(found: _Found, s: Submission) -> Submission:
    """The job's spec and pod template (job_spec.py, pod_template.py): their problems, and the
    submission with the template's image and command, for the rules that follow."""
    if s.spec is None and s.pod_template in (None, ""):
        return s
    spec = pod_template.resolve(s.image, s.command, s.spec, s.pod_template, s.service_class)
    for name, message in spec.problems:
        found.add(name, message)
    if s.pod_template in (None, ""):
        return s
    if any(name == "pod_template" for name, _ in spec.problems):
        # a template that is wrong may be where the image is: the image rule waits for it
        return replace(s, image=spec.image or None, command=spec.command or None)
    return replace(s, image=spec.image, command=spec.command)


def _text(found: _Found, s: Submission, estimate: bool) -> None:
    if s.name is not None:
        if not s.name:
            if not estimate:
                found.add("name", "Give the job a name, e.g. train-llama.")
        else:
            try:
                dns_label(s.name)
            except ValidationError as error:
                found.add("name", error.messages[0])
    if s.image is not None:
        if not s.image:
            if not estimate:
                found.add("image", "Name the container image, e.g. pytorch/pytorch:2.4.")
        elif len(s.image) > MAX_IMAGE:
            found.add(
                "image", f"At most {MAX_IMAGE} characters; this image name has {len(s.image)}."
            )


def _command(found: _Found, command: Sequence[str] | None) -> None:
    if command is None:
        return
    if not isinstance(command, list | tuple) or not all(isinstance(c, str) for c in command):
        found.add("command", 'The command must be a list of strings, e.g. ["python", "train.py"].')
    elif len(command) > MAX_COMMAND_ITEMS:
        found.add(
            "command", f"At most {MAX_COMMAND_ITEMS} words in the command; it has {len(command)}."
        )
    elif any(len(word) > MAX_COMMAND_ITEM for word in command):
        found.add("command", f"Each word of the command has at most {MAX_COMMAND_ITEM} characters.")
    elif any("\x00" in word for word in command):
        found.add("command", "The NUL character is not allowed in the command.")


def _size(found: _Found, s: Submission) -> None:
    workers, gpus, least = s.workers, s.gpus_per_worker, s.min_workers
    if workers is not None:
        if workers < 1:
            found.add("workers", "A job needs at least one worker.")
        elif workers > MAX_WORKERS:
            found.add("workers", f"At most {MAX_WORKERS} workers.")
    if gpus is not None:
        if gpus < 1:
            found.add("gpus_per_worker", "Each worker needs at least one GPU (or MIG slice).")
        elif gpus > MAX_GPUS_PER_WORKER:
            found.add("gpus_per_worker", f"At most {MAX_GPUS_PER_WORKER} GPUs per worker.")
    if least is not None:
        if least < 1:
            found.add("min_workers", "min_workers must be at least 1 (or empty for a gang job).")
        elif workers is not None and not found.bad("workers") and least > workers:
            found.add(
                "min_workers",
                f"min_workers ({least}) cannot exceed workers ({workers}): an elastic job "
                "starts with between min_workers and workers workers.",
            )


def _topology(found: _Found, s: Submission) -> None:
    level, mode = s.topology_level, s.topology_mode
    if level is None or mode is None:
        return
    if mode and mode not in TOPOLOGY_MODES:
        found.add("topology_mode", f"The topology mode is required or preferred, not {mode!r}.")
    elif level and not mode:
        found.add(
            "topology_mode", f"Say whether topology level {level!r} is required or preferred."
        )
    if mode and not level:
        found.add(
            "topology_level",
            "Name the topology level (a node label key such as rack or block), or clear the "
            "topology mode.",
        )
    elif len(level) > MAX_NAME:
        found.add("topology_level", f"A node label key of at most {MAX_NAME} characters.")


def _seconds(found: _Found, s: Submission) -> None:
    for name, what in SECONDS.items():
        value = getattr(s, name)
        if value is None:
            continue
        if value <= 0:
            found.add(name, f"{what} must be greater than 0 seconds.")
        elif value > MAX_INT:
            found.add(name, f"{what} must be at most {MAX_INT} seconds.")


def _flavor_list(found: _Found, flavors: Sequence[Flavor]) -> None:
    if not flavors:
        found.add("flavors", "Choose at least one acceptable flavor.")
    elif len(flavors) > MAX_FLAVORS:
        found.add("flavors", f"At most {MAX_FLAVORS} acceptable flavors.")
    seen: set[int] = set()
    for index, flavor in enumerate(flavors):
        if flavor.pk in seen:
            found.add(
                "flavors",
                f"Each flavor may appear once; repeated: {flavor.name}.",
                index,
            )
        seen.add(flavor.pk)


def _flavors(found: _Found, s: Submission) -> None:
    if s.flavors is None or found.bad("flavors"):
        return
    _flavor_list(found, s.flavors)
    if s.queue is None or found.bad("queue"):
        return
    quotas = {q.flavor_id: q.flavor.name for q in found.catalog.quotas_of(s.queue)}
    for index, flavor in enumerate(s.flavors):
        if flavor.pk not in quotas:
            names = ", ".join(sorted(quotas.values())) or "none"
            found.add(
                "flavors",
                f"Queue {s.queue} has no quota for {flavor.name}; it has: {names}.",
                index,
            )


# --- Could it ever run? ----------------------------------------------------------------------


def _fits(found: _Found, s: Submission) -> None:
    """The engine's never-reasons, for the acceptable flavors together: the job is refused only
    when no flavor could ever take it, and the field named is the one to change."""
    queue, cls, flavors = s.queue, s.service_class, s.flavors
    workers, gpus = s.workers, s.gpus_per_worker
    if queue is None or cls is None or flavors is None or workers is None or gpus is None:
        return
    if found.bad("queue", "service_class", "flavors", "workers", "gpus_per_worker", "min_workers"):
        return
    least = s.min_workers if s.elastic and s.min_workers is not None else workers
    need = least * gpus
    field = "min_workers" if s.elastic else "workers"
    smallest = " (the elastic minimum)" if s.elastic else ""
    size = f"{least} worker(s){smallest} x {gpus} GPU(s) = {need}"
    node, cluster = found.catalog.node_most, found.catalog.cluster_most

    fit_node = [f for f in flavors if node.get(f.name, 0) >= gpus]
    if not fit_node:
        where = "; ".join(
            f"{f.name}: at most {node[f.name]} on one node" if node.get(f.name) else
            f"{f.name}: no node has it"
            for f in flavors
        )  # fmt: skip
        found.add(
            "gpus_per_worker",
            f"No node can hold one worker of {gpus} GPU(s) of the acceptable flavors ({where}).",
        )
        return
    fit_cluster = [f for f in fit_node if cluster.get(f.name, 0) >= need]
    if not fit_cluster:
        where = "; ".join(f"{f.name}: at most {cluster[f.name]} in one cluster" for f in fit_node)
        found.add(
            field,
            f"{size} is more than any cluster holds of the acceptable flavors ({where}); a job "
            "runs in one cluster. Ask for fewer workers or GPUs per worker.",
        )
        return
    quota = _QuotaView(queue, found.catalog)
    if all(quota.never_fits(f, need, cls.can_borrow) for f in fit_cluster):
        most = "; ".join(f"{f.name}: {quota.most(f, cls)}" for f in fit_cluster)
        found.add(
            field,
            f"{size} is more than queue {queue} can ever use ({most}). Ask for fewer GPUs or "
            "a larger quota.",
        )


class _QuotaView:
    """The engine's quota accounting for a queue and its cohort tree, with nothing in use."""

    def __init__(self, queue: Queue, found: catalog.Catalog) -> None:
        """From the catalog: the quotas of every queue of the queue's cohort tree (the pools
        are the tree's: every member's lending counts), or the queue's own when it has no
        cohort, and the tree's cohorts with their own quotas (docs/SCHEDULING.md 2a)."""
        rows, cohort_rows, cohort_ids = found.tree_quotas(queue)
        self.queue = queue
        by_queue: dict[int, dict[str, engine.Quota]] = defaultdict(dict)
        cohort_of: dict[int, int | None] = {queue.pk: queue.cohort_id}
        self.rows: dict[int, Quota] = {}
        for row in rows:
            by_queue[row.queue_id][str(row.flavor_id)] = _engine_quota(row)
            member = found.queues.get(row.queue_id)
            cohort_of[row.queue_id] = member.cohort_id if member is not None else None
            if row.queue_id == queue.pk:
                self.rows[row.flavor_id] = row
        by_queue.setdefault(queue.pk, {})
        own: dict[int, dict[str, engine.Quota]] = defaultdict(dict)
        for cohort_row in cohort_rows:
            own[cohort_row.cohort_id][str(cohort_row.flavor_id)] = _engine_quota(cohort_row)
        parents = found.cohort_parents
        cohorts = [
            engine.Cohort(str(pk), _name(parents.get(pk)), own.get(pk, {})) for pk in cohort_ids
        ]
        queues = [
            engine.Queue(str(pk), quotas, cohort=_name(cohort_of.get(pk)))
            for pk, quotas in by_queue.items()
        ]
        self.state = QuotaState(queues, static=QuotaStatics(queues, cohorts))

    def never_fits(self, flavor: Flavor, units: int, can_borrow: bool) -> bool:
        return self.state.never_fits(str(self.queue.pk), str(flavor.pk), units, can_borrow)

    def most(self, flavor: Flavor, service_class: ServiceClass) -> str:
        """What bounds the queue's use of ``flavor``, in the engine's words (explain.py)."""
        row = self.rows.get(flavor.pk)
        nominal = row.nominal if row is not None else 0
        if self.queue.cohort_id is None:
            return f"its nominal quota of {nominal}, and the queue has no cohort"
        if not service_class.can_borrow:
            return f"its nominal quota of {nominal}, and class {service_class.name} may not borrow"
        pool = self.state.tree.most(str(self.queue.cohort_id), str(flavor.pk))
        text = f"its nominal {nominal} plus what it may borrow"
        if row is not None and row.borrowing_limit is not None:
            text += f" (at most {nominal + row.borrowing_limit})"
        if self.state.tree.hierarchical:
            where = f"the most its cohort {self.queue.cohort} can get through its cohort tree"
            return f"{text} from {where} ({pool})"
        return f"{text} from the cohort pool of {self.queue.cohort} ({pool})"


def _name(pk: int | None) -> str | None:
    return None if pk is None else str(pk)


def _engine_quota(row: Quota | CohortQuota) -> engine.Quota:
    return engine.Quota(
        nominal=row.nominal, borrowing_limit=row.borrowing_limit, lending_limit=row.lending_limit
    )

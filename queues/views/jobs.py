"""Jobs: the filterable, sortable, paginated list; one job's detail; cancel."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from datetime import datetime, time
from functools import partial
from typing import Any, NamedTuple

from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.forms.models import ModelChoiceIterator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe
from django.utils.timezone import template_localtime
from django.views.decorators.http import require_POST

from accounting import rating
from accounting.chargeback import Totals
from accounting.job_money import costs_so_far, job_cost
from accounting.pricing import currency
from accounting.rating import RatingError
from gpuplatform import access
from gpuplatform.plain_widgets import PLAIN_WIDGETS, printed
from gpusched.engine.stop_bound import STOP_BOUND
from queues.models import (
    Flavor,
    IllegalTransition,
    Job,
    JobEvent,
    JobRuntime,
    Queue,
    ServiceClass,
    job_spec,
)
from queues.models.jobs import ranked_flavors
from queues.services import cancel_job, clock
from queues.services.protection import protection_notes
from queues.services.worker_logs import (
    DEFAULT_TAIL,
    MAX_TAIL,
    LogQuery,
    LogsUnavailable,
    has_workers,
    job_logs,
    parse_log_query,
)
from queues.templatetags.ui import duration

PAGE_SIZE = 50
LIVE_SECONDS = 10  # the job page and the list follow the scheduler (static/js/live.js)
SORTS = {
    "name": ("name", "pk"),
    "queue": ("queue__team__name", "queue__name", "-pk"),
    "owner": ("owner__username", "-pk"),
    "class": ("service_class__name", "-pk"),
    "state": ("state", "-pk"),
    "submitted": ("submitted_at", "pk"),
    "gpus": ("workers", "gpus_per_worker", "pk"),
}
DEFAULT_SORT = "-submitted"


class _PlainChoices(ModelChoiceIterator):
    """A select's options read in one plain query: Django's own iterator reads them through
    ``QuerySet.iterator()``, on PostgreSQL a server-side cursor (DECLARE, FETCH and CLOSE: three
    round trips) for a handful of rows."""

    def __iter__(self) -> Iterator[tuple[Any, str]]:
        if self.field.empty_label is not None:
            yield ("", self.field.empty_label)
        for obj in self.queryset.all():
            yield self.choice(obj)


class _ChoiceField(forms.ModelChoiceField):
    iterator = _PlainChoices


class JobFilterForm(forms.Form):
    default_renderer = PLAIN_WIDGETS  # its selects and inputs without templates, the same HTML

    scope = forms.ChoiceField(
        choices=[("team", "My teams' jobs"), ("mine", "My jobs")], required=False
    )
    state = forms.ChoiceField(choices=[("", "any state"), *Job.State.choices], required=False)
    queue = _ChoiceField(queryset=Queue.objects.none(), required=False, empty_label="any queue")
    service_class = _ChoiceField(
        queryset=ServiceClass.objects.all(), required=False, empty_label="any class",
        label="Class",
    )  # fmt: skip

    owner = forms.CharField(required=False, label="Owner", max_length=150)
    flavor = _ChoiceField(
        queryset=Flavor.objects.all(), required=False, empty_label="any GPU type",
        label="GPU type",
    )  # fmt: skip
    submitted_from = forms.DateField(
        required=False, label="Submitted from (UTC)", widget=forms.DateInput(attrs={"type": "date"})
    )
    submitted_to = forms.DateField(
        required=False, label="Submitted to (UTC)", widget=forms.DateInput(attrs={"type": "date"})
    )

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["queue"].queryset = access.visible_queues(user).select_related("team")
        self.fields["queue"].label_from_instance = lambda q: f"{q.team.name}/{q.name}"


def _order(sort: str) -> tuple[str, list[str]]:
    column = sort.lstrip("-")
    if column not in SORTS:
        sort, column = DEFAULT_SORT, DEFAULT_SORT.lstrip("-")
    fields = list(SORTS[column])
    if sort.startswith("-"):
        fields = [f[1:] if f.startswith("-") else f"-{f}" for f in fields]
    return sort, fields


@login_required
def job_list(request: HttpRequest) -> HttpResponse:
    access.require_submitter(request.user)
    form = JobFilterForm(request.GET or None, user=request.user)
    jobs = Job.objects.visible_to(request.user)
    if form.is_bound and form.is_valid():
        data = form.cleaned_data
        if data.get("scope") == "mine":
            jobs = jobs.filter(owner=request.user)
        if data.get("state"):
            jobs = jobs.filter(state=data["state"])
        if data.get("queue"):
            jobs = jobs.filter(queue=data["queue"])
        if data.get("service_class"):
            jobs = jobs.filter(service_class=data["service_class"])
        if data.get("owner"):
            jobs = jobs.filter(owner__username=data["owner"].strip())
        if data.get("flavor"):
            jobs = jobs.filter(flavor_links__flavor=data["flavor"]).distinct()
        if data.get("submitted_from"):
            jobs = jobs.filter(submitted_at__gte=_utc(data["submitted_from"], time.min))
        if data.get("submitted_to"):
            jobs = jobs.filter(submitted_at__lte=_utc(data["submitted_to"], time.max))
    sort, order = _order(request.GET.get("sort", DEFAULT_SORT))
    jobs = jobs.order_by(*order)
    paginator = Paginator(jobs.values_list(*LISTED), PAGE_SIZE)
    paginator.count = jobs.count()  # of the jobs alone: the values' joins would be counted too
    page = paginator.get_page(request.GET.get("page"))
    listed = page.object_list = [Listed(*values) for values in page]
    ids = [job.pk for job in listed]
    ranked = ranked_flavors(ids)
    now = timezone.now()
    try:
        costs = costs_so_far(ids, now)
    except RatingError:  # a flavor without a price: the job page says which
        costs = {}
    admitted = _admitted_flavors(listed, ranked)
    rows = [
        _row_html(_row(job, ranked.get(job.pk, []), admitted, now, _cost_text(costs.get(job.pk))))
        for job in listed
    ]
    params = request.GET.copy()
    params.pop("page", None)
    return render(
        request,
        "queues/job_list.html",
        {
            "form": form,
            "page": page,
            "rows": rows,
            "sort": sort,
            "query": params.urlencode(),
            "live_seconds": LIVE_SECONDS,
            "currency": currency(),
        },
    )


def _cost_text(totals: Totals | None) -> str:
    """What a job has cost so far, as its page and the chargeback sum it ("—": nothing yet)."""
    return "—" if totals is None else str(rating.quantize_money(totals.cost))


def _utc(day: Any, at: time) -> datetime:
    return datetime.combine(day, at, tzinfo=timezone.get_current_timezone())


class Listed(NamedTuple):
    """A job as the list shows it, read as values (the page's read without model instances:
    building the jobs with their queue, team, owner, class and runtime as instances took about
    a quarter of the page's CPU)."""

    pk: int
    name: str
    state: str
    workers: int
    gpus_per_worker: int
    preemption_count: int
    submitted_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    queue: str
    team: str
    owner: str
    service_class: str
    admitted_flavor_id: int | None  # the runtime row's flavor (None: no runtime row or none)


LISTED = (  # Listed's fields, in order
    "pk", "name", "state", "workers", "gpus_per_worker", "preemption_count",
    "submitted_at", "started_at", "finished_at", "queue__name", "queue__team__name",
    f"owner__{get_user_model().USERNAME_FIELD}", "service_class__name", "runtime__flavor_id",
)  # fmt: skip
STATE_LABELS = {value: str(label) for value, label in Job.State.choices}
HOLDING = ("admitted", "running", "preempted")


def _admitted_flavors(
    listed: list[Listed], ranked: dict[int, list[tuple[int, str]]]
) -> dict[int, str]:
    """Names of the admitted flavors that are not among their job's choices (none, in practice:
    read only then)."""
    missing = {
        job.admitted_flavor_id
        for job in listed
        if job.state in HOLDING
        and job.admitted_flavor_id is not None
        and all(pk != job.admitted_flavor_id for pk, _ in ranked.get(job.pk, []))
    }
    return dict(Flavor.objects.filter(pk__in=missing).values_list("pk", "name")) if missing else {}


def _row(
    job: Listed, ranked: list[tuple[int, str]], admitted: dict[int, str], now: datetime, cost: str
) -> dict[str, Any]:
    """One row of the list, each cell's text made here: the template only prints plain values
    (looking names up through model instances, each lookup first tried as a key, was most of the
    page's rendering). The GPU type is the admitted one, else the choices in order; the wait is
    so far or until the job started, the runtime so far or until it ended (wall-clock)."""
    flavor_id = job.admitted_flavor_id
    if job.state in HOLDING and flavor_id is not None:
        names = [name for pk, name in ranked if pk == flavor_id]
        gpu_type = names[0] if names else admitted[flavor_id]
    else:
        gpu_type = " or ".join(name for _, name in ranked)
    end = job.finished_at or now
    if job.started_at is not None:
        wait = (job.started_at - job.submitted_at).total_seconds()
        ran: float | None = max(0.0, (end - job.started_at).total_seconds())
    else:
        wait, ran = (end - job.submitted_at).total_seconds(), None
    submitted = template_localtime(job.submitted_at)
    return {
        "url": reverse("job-detail", args=[job.pk]),
        "pk": job.pk,
        "name": job.name,
        "queue": f"{job.team}/{job.queue}",
        "owner": job.owner,
        "service_class": job.service_class,
        "state": job.state,
        "state_label": STATE_LABELS.get(job.state, job.state),
        "workers": job.workers,
        "gpus_per_worker": job.gpus_per_worker,
        "gpu_type": gpu_type,
        "wait": duration(max(0.0, wait)) + (" so far" if job.state == "pending" else ""),
        "runtime": "—" if ran is None else duration(ran),
        "preemption_count": job.preemption_count,
        "cost": cost,
        "submitted_iso": submitted.isoformat(),  # the date filter's "c"
        "submitted": (  # its "Y-m-d H:i"
            f"{submitted.year:04d}-{submitted.month:02d}-{submitted.day:02d} "
            f"{submitted.hour:02d}:{submitted.minute:02d}"
        ),
    }


ROW = (
    '\n    <tr><td><a href="{url}">{name}</a> <span class="muted">#{pk}</span></td>\n'
    "      <td>{queue}</td><td>{owner}</td>\n"
    '      <td>{service_class}</td><td><span class="state state-{state}">{state_label}</span>'
    "</td>\n"
    "      <td>{workers} \u00d7 {gpus_per_worker}</td>\n"  # a multiplication sign
    "      <td>{gpu_type}</td><td>{wait}</td>\n"
    "      <td>{runtime}</td>\n"
    "      <td>{preemption_count}</td>\n"
    '      <td class="num">{cost}</td>\n'
    '      <td><time datetime="{submitted_iso}">{submitted}</time></td></tr>\n    '
)


def _row_html(cells: dict[str, Any]) -> SafeString:
    """A row of the list as the page prints it (ROW, each cell printed as ``{{ cell }}`` prints
    it): rendering the row through the template took a tenth of the page's CPU."""
    return mark_safe(ROW.format_map({name: printed(value) for name, value in cells.items()}))


def _placement(job: Job) -> list[dict[str, Any]]:
    return [
        {"node": node, "workers": int(count), "gpus": int(count) * job.gpus_per_worker}
        for node, count in sorted(job.placement.items())
    ]


@login_required
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    job = access.visible_job_or_404(request.user, pk)
    try:
        runtime: JobRuntime | None = JobRuntime.objects.select_related("flavor").get(job=job)
    except JobRuntime.DoesNotExist:
        runtime = None
    events = JobEvent.objects.filter(job=job).order_by("at", "pk")
    try:
        cost, cost_error = job_cost(job, timezone.now()), ""
    except RatingError as error:
        cost, cost_error = None, str(error)
    return render(
        request,
        "queues/job_detail.html",
        {
            "job": job,
            "runtime": runtime,
            "flavors": job.acceptable_flavor_names(),
            "placement": _placement(job),
            "spec_rows": spec_rows(job.spec),
            "runtime_note": clock.runtime_note(job.estimated_runtime, job.cluster),
            "events": events,
            "cost": cost,
            "cost_error": cost_error,
            "can_cancel": not job.is_finished and access.can_cancel_job(request.user, job),
            "can_copy": access.submittable_queues(request.user).filter(pk=job.queue_id).exists(),
            "live_seconds": LIVE_SECONDS,
            "stop_bound": STOP_BOUND,
            "protection": protection_notes(job, timezone.now()),
            "workers": _workers(request, job)
            if access.can_read_job_logs(request.user, job)
            else None,
        },
    )


def _workers(request: HttpRequest, job: Job) -> dict[str, Any]:
    """The "Workers and logs" panel: every worker's pod status, and the last lines of one
    worker's log (``?worker=`` default 0, ``?tail=`` default 100), read from the cluster now."""
    panel: dict[str, Any] = {
        "indexes": range(job.workers), "worker": 0, "tail": DEFAULT_TAIL, "max_tail": MAX_TAIL,
        "errors": {},
    }  # fmt: skip
    if not has_workers(job):
        panel["detail"] = job_logs(job).detail  # reads no cluster
        return panel
    try:
        query = parse_log_query(request.GET, job)
    except ValidationError as error:
        panel["errors"] = {field: " ".join(texts) for field, texts in error.message_dict.items()}
        query = LogQuery(None, DEFAULT_TAIL)
    panel["worker"] = query.worker or 0
    panel["tail"] = query.tail
    try:
        overview = job_logs(job, None, 0)
        shown = job_logs(job, panel["worker"], query.tail) if overview.workers else None
    except LogsUnavailable as error:
        panel["error"] = str(error)
        return panel
    panel["detail"] = overview.detail
    panel["statuses"] = overview.workers
    panel["shown"] = shown.workers[0] if shown and shown.workers else None
    return panel


def spec_rows(spec: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """The job's spec in words for its page: env by name only (a value may be a secret; a
    Secret's key is named, never read), volumes, shared memory, CPU and memory, the rest."""
    rows: list[tuple[str, list[str]]] = []

    def add(label: str, values: list[str]) -> None:
        if values:
            rows.append((label, values))

    value = partial(job_spec.value, spec)
    add("Arguments", [shlex.join(value("args"))] if value("args") else [])
    add("Working directory", [value("working_dir")] if value("working_dir") else [])
    add(
        "Environment",
        [
            f"{var['name']} (from secret {ref['name']}, key {ref['key']})"
            if (ref := var.get("valueFrom", {}).get("secretKeyRef"))
            else var["name"]
            for var in value("env")
        ],
    )
    volumes = []
    for volume in value("volumes"):
        kind = next(k for k in job_spec.VOLUME_SOURCE_KEYS if k in volume)
        source = volume[kind]
        what = " ".join(f"{k} {v}" for k, v in source.items()) if kind == "emptyDir" else ""
        name = "" if kind == "emptyDir" else source[job_spec.VOLUME_SOURCE_KEYS[kind][0]]
        volumes.append(
            f"{volume['mountPath']}: {kind} {name or what}".rstrip()
            + (" (read-only)" if volume.get("readOnly") else "")
        )
    add("Volumes", volumes)
    add("Shared memory (/dev/shm)", [value("shm_size")] if value("shm_size") else [])
    for what in ("cpu", "memory"):
        request, limit = value(what), value(f"{what}_limit")
        if request or limit:
            shown = f"{request or limit} requested, limit {limit or request}"
            add("CPU per worker" if what == "cpu" else "Memory per worker", [shown])
    secret = value("image_pull_secret")
    add("Image pull secret", [secret] if secret else [])
    add("Tolerations", [_toleration(t) for t in value("tolerations")])
    add("Labels", [f"{k}={v}" for k, v in value("labels").items()])
    add("Annotations", list(value("annotations")))
    add("Host network", ["yes"] if value("host_network") else [])
    return rows


def _toleration(item: dict[str, Any]) -> str:
    text = item.get("key") or "every taint"
    if item.get("operator") != "Exists":
        text += f"={item.get('value', '')}"
    if item.get("effect"):
        text += f" ({item['effect']})"
    return text


@login_required
@require_POST
def job_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    job = access.visible_job_or_404(request.user, pk)
    try:
        cancel_job(job, request.user)
    except PermissionDenied:
        raise
    except IllegalTransition as error:
        messages.error(request, str(error))
    else:
        messages.success(request, f"Cancelled {job.name} (#{job.pk}).")
    return redirect("job-detail", pk=job.pk)

"""The job submission form: it parses what the page sends into a ``Submission`` and shows the
errors of the submission rules (queues/models/job_rules.py) beside the fields they name, the
errors of all the fields at once."""

from __future__ import annotations

import shlex
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.forms.models import ModelChoiceIterator

from gpuplatform import access
from queues.forms import spec_lines as lines
from queues.models import Flavor, Queue, ServiceClass, job_spec
from queues.models import job_rules as rules
from queues.models.pod_template import MAX_TEXT as TEMPLATE_MAX
from queues.services.snapshot import TOPOLOGY_LEVELS

FLAVOR_FIELDS = ("flavor", "fallback_1", "fallback_2")
FALLBACKS = FLAVOR_FIELDS[1:]
# The form's fields by the name the rules give them (the rest have the same name).
RULE_FIELD = {name: "flavors" for name in FLAVOR_FIELDS} | {"pod_template_file": "pod_template"}
# the Advanced section: the job's spec (queues/models/job_spec.py), written as lines of text
ADVANCED_FIELDS = (
    "args", "env", "volumes", "shm_size", "cpu", "memory", "cpu_limit", "memory_limit",
    "image_pull_secret", "working_dir", "tolerations", "labels", "annotations", "host_network",
)  # fmt: skip
YAML_FIELDS = ("pod_template", "pod_template_file")
LINES = {  # the Advanced fields written as lines: parse (form -> spec), format (spec -> form)
    "env": (lines.parse_env, lines.format_env),
    "volumes": (lines.parse_volumes, lines.format_volumes),
    "tolerations": (lines.parse_tolerations, lines.format_tolerations),
    "labels": (lines.parse_pairs, lines.format_pairs),
    "annotations": (lines.parse_pairs, lines.format_pairs),
}


def _lines(rows: int = 3) -> forms.Textarea:
    return forms.Textarea(attrs={"rows": rows, "spellcheck": "false"})


def _text(label: str, help_text: str, placeholder: str = "") -> forms.CharField:
    return forms.CharField(
        label=label,
        required=False,
        max_length=300,
        help_text=help_text,
        widget=forms.TextInput(attrs={"placeholder": placeholder} if placeholder else {}),
    )


def _number(low: int, high: int) -> forms.NumberInput:
    """A number box with the rule's range as a hint (the rules check it)."""
    return forms.NumberInput(attrs={"min": low, "max": high})


class _Shown(ModelChoiceIterator):
    """A choice field's options: ``shown`` (the field looks values up in its wider queryset, so
    that a value outside the options gets the rules' message, the one the API gives)."""

    def __init__(self, field: forms.ModelChoiceField, shown: QuerySet[Any]) -> None:
        super().__init__(field)
        self.queryset = shown


class QueueChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Any) -> str:
        return f"{obj.team.name}/{obj.name}"


class SubmitForm(forms.Form):
    queue = QueueChoiceField(queryset=Queue.objects.none(), help_text="Your teams' open queues.")
    service_class = forms.ModelChoiceField(
        queryset=ServiceClass.objects.all(),
        help_text="Priority and protection; only the classes the queue allows are accepted.",
    )
    name = forms.CharField(help_text="Lowercase letters, digits and hyphens, e.g. resnet-train.")
    image = forms.CharField(
        required=False,  # the rules ask for it unless a pod template gives it
        help_text="Container image, e.g. pytorch/pytorch:2.4.",
    )
    command = forms.CharField(
        required=False,
        max_length=2000,
        help_text='Split like a shell, e.g. python train.py --epochs "3".',
    )
    workers = forms.IntegerField(
        initial=1, widget=_number(1, rules.MAX_WORKERS), help_text="Gang size: all start or none."
    )
    gpus_per_worker = forms.IntegerField(
        label="GPUs per worker", initial=1, widget=_number(1, rules.MAX_GPUS_PER_WORKER)
    )
    flavor = forms.ModelChoiceField(
        label="GPU type or MIG profile",
        queryset=Flavor.objects.none(),
        help_text="Only flavors the queue has a quota for.",
    )
    fallback_1 = forms.ModelChoiceField(
        label="First fallback (optional)",
        queryset=Flavor.objects.none(),
        required=False,
        help_text="Used when the first choice does not fit.",
    )
    fallback_2 = forms.ModelChoiceField(
        label="Second fallback (optional)", queryset=Flavor.objects.none(), required=False
    )
    min_workers = forms.IntegerField(
        label="Elastic minimum (optional)",
        required=False,
        widget=_number(1, rules.MAX_WORKERS),
        help_text="Makes the job elastic: it may start with this many workers and grow.",
    )
    topology_level = forms.ChoiceField(
        label="Topology level",
        required=False,
        choices=[("", "anywhere")] + [(level, level) for level in TOPOLOGY_LEVELS],
        help_text="Keep all workers inside one of these domains.",
    )
    topology_mode = forms.ChoiceField(
        label="Topology mode",
        required=False,
        choices=[("", "—"), ("required", "required"), ("preferred", "preferred")],
    )
    estimated_runtime = forms.IntegerField(
        label="Estimated runtime (minutes, optional)",
        required=False,
        widget=_number(1, rules.MAX_INT // 60),
        help_text="Lets the job start early in gaps (backfill) when it is short.",
    )
    # Advanced: the job's spec
    args = forms.CharField(
        label="Arguments", required=False, max_length=20_000,
        help_text="After the command (the image's entrypoint when there is no command), split "
        "like a shell.",
    )  # fmt: skip
    env = forms.CharField(
        label="Environment", required=False, max_length=200_000, widget=_lines(),
        help_text="One a line: NAME=value, or NAME from secret SECRET/KEY (a key of a Secret in "
        "your team's namespace). WORLD_SIZE, RANK, MASTER_ADDR and MASTER_PORT are set for you.",
    )  # fmt: skip
    volumes = forms.CharField(
        required=False, max_length=20_000, widget=_lines(),
        help_text="One a line: pvc:CLAIM /path, configmap:NAME /path, secret:NAME /path or "
        "emptydir[:Memory][:SIZE] /path; add ro for read-only.",
    )  # fmt: skip
    shm_size = _text(
        "Shared memory (/dev/shm)",
        "e.g. 16Gi; PyTorch data loaders and NCCL need more than the default 64Mi.",
        "16Gi",
    )
    cpu = _text("CPU per worker", "A request, e.g. 8 or 500m.", "8")
    memory = _text("Memory per worker", "A request, e.g. 64Gi.", "64Gi")
    cpu_limit = _text("CPU limit", "Empty: the request. At least the request.")
    memory_limit = _text("Memory limit", "Empty: the request. At least the request.")
    image_pull_secret = _text(
        "Registry secret",
        "A Secret of your team's namespace to pull the image from a private registry.",
    )
    working_dir = _text("Working directory", "An absolute path, e.g. /workspace.")
    tolerations = forms.CharField(
        required=False, max_length=20_000, widget=_lines(2),
        help_text="One a line: KEY=VALUE:EFFECT, KEY:EFFECT (any value), KEY=VALUE or KEY.",
    )  # fmt: skip
    labels = forms.CharField(
        required=False, max_length=20_000, widget=_lines(2),
        help_text="One a line: key=value; not gpuplatform/*, kueue.x-k8s.io/* or "
        "app.kubernetes.io/managed-by.",
    )  # fmt: skip
    annotations = forms.CharField(
        required=False, max_length=300_000, widget=_lines(2), help_text="One a line: key=value."
    )
    host_network = forms.BooleanField(
        label="Host network", required=False,
        help_text="Use the node's network (only in a class that allows it).",
    )  # fmt: skip
    # Submit from YAML
    pod_template = forms.CharField(
        label="Pod template (YAML)", required=False, widget=_lines(12),
        help_text="A Pod, PodTemplateSpec or PodSpec: its first container's image, command, "
        "args, env, workingDir, cpu and memory, volumeMounts, and its volumes, tolerations and "
        "imagePullSecrets become the job's. The platform sets the GPUs and the placement.",
    )  # fmt: skip
    pod_template_file = forms.FileField(
        label="or upload a YAML file", required=False,
        help_text=f"At most {TEMPLATE_MAX // 1024} KiB.",
    )  # fmt: skip

    def __init__(self, *args: Any, user: Any, for_estimate: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.user = user
        self.for_estimate = for_estimate
        self.checked: rules.Checked | None = None  # the rules said yes to the submission
        self.open_queues = (
            access.submittable_queues(user).select_related("team").order_by("team__name", "name")
        )
        queue = self.fields["queue"]
        queue.queryset = access.visible_queues(user).select_related("team")
        queue.widget.choices = _Shown(queue, self.open_queues)
        shown = Flavor.objects.filter(quotas__queue__in=self.open_queues).distinct()
        for name in FLAVOR_FIELDS:
            self.fields[name].queryset = Flavor.objects.all()
            self.fields[name].widget.choices = _Shown(self.fields[name], shown.order_by("name"))
        if for_estimate:  # the live estimate needs only what decides where the job goes
            for name in ("name", "image"):
                self.fields[name].required = False

    def clean_args(self) -> list[str]:
        try:
            return shlex.split(self.cleaned_data.get("args", ""))
        except ValueError as error:
            raise ValidationError(f"The arguments cannot be split like a shell: {error}.") from None

    def clean_pod_template_file(self) -> str:
        upload = self.cleaned_data.get("pod_template_file")
        if not upload:
            return ""
        if upload.size > TEMPLATE_MAX:
            raise ValidationError(f"At most {TEMPLATE_MAX // 1024} KiB.")
        try:
            text: str = upload.read().decode("utf-8")
        except UnicodeDecodeError:
            raise ValidationError("Not a text file (UTF-8 YAML).") from None
        if self.data.get("pod_template", "").strip():
            raise ValidationError("Paste the template or upload it, not both.")
        return text

    def _clean_lines(self, name: str) -> Any:
        return LINES[name][0](self.cleaned_data.get(name, ""))

    def clean_env(self) -> Any:
        return self._clean_lines("env")

    def clean_volumes(self) -> Any:
        return self._clean_lines("volumes")

    def clean_tolerations(self) -> Any:
        return self._clean_lines("tolerations")

    def clean_labels(self) -> Any:
        return self._clean_lines("labels")

    def clean_annotations(self) -> Any:
        return self._clean_lines("annotations")

    def clean_command(self) -> list[str]:
        text = self.cleaned_data.get("command", "")
        try:
            return shlex.split(text)
        except ValueError as error:
            raise ValidationError(f"The command cannot be split like a shell: {error}.") from None

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        unparsed = {RULE_FIELD.get(name, name) for name in self.errors}
        submission = self.submission()
        found = rules.problems(self.user, submission, estimate=self.for_estimate, unparsed=unparsed)
        self.add_problems(found)
        if not found and not self.errors and not self.for_estimate:  # submit_job: not again
            self.checked = rules.Checked(self.user.pk, submission)
        return data

    def add_problems(self, problems: Any) -> None:
        """Show the rules' ``problems`` beside the fields they name (an error about one flavor
        beside that flavor's field)."""
        chosen = [n for n in FLAVOR_FIELDS if self.cleaned_data.get(n) is not None]
        for problem in problems:
            name = problem.field
            if name == "flavors":
                name = chosen[problem.flavor] if problem.flavor is not None else "flavor"
            self.add_error(name if name in self.fields else None, problem.message)

    def submission(self) -> rules.Submission:
        """The parsed values (``None`` where a field did not parse; times in seconds)."""
        data = getattr(self, "cleaned_data", {})
        minutes = data.get("estimated_runtime")
        return rules.Submission(
            queue=data.get("queue"),
            service_class=data.get("service_class"),
            flavors=self.flavor_list(),
            name=data.get("name"),
            image=data.get("image"),
            command=data.get("command"),
            workers=data.get("workers"),
            gpus_per_worker=data.get("gpus_per_worker"),
            min_workers=data.get("min_workers"),
            topology_level=data.get("topology_level"),
            topology_mode=data.get("topology_mode"),
            estimated_runtime=None if minutes is None else minutes * 60,
            spec={name: data[name] for name in ADVANCED_FIELDS if data.get(name)} or None,
            pod_template=data.get("pod_template") or data.get("pod_template_file") or None,
        )

    def flavor_list(self) -> list[Flavor]:
        """The chosen flavor and its fallbacks, in order of preference."""
        data = getattr(self, "cleaned_data", {})
        return [data[n] for n in FLAVOR_FIELDS if data.get(n) is not None]

    def topology(self) -> tuple[str, str] | None:
        level = self.cleaned_data.get("topology_level")
        return (level, self.cleaned_data["topology_mode"]) if level else None

    def runtime_seconds(self) -> int | None:
        minutes = self.cleaned_data.get("estimated_runtime")
        return None if minutes is None else minutes * 60

    def advanced_open(self) -> bool:
        """Whether the Advanced section starts open: something is written in it."""
        return any(self[name].value() for name in ADVANCED_FIELDS)

    def yaml_open(self) -> bool:
        return bool(self["pod_template"].value() or self.errors.get("pod_template"))

    def queue_info(self) -> dict[str, Any]:
        """For the page's script: queue id -> the class ids it accepts and the flavor ids it has
        a quota for (the form narrows its choices as the queue changes)."""
        queues = self.open_queues.prefetch_related("allowed_service_classes", "quotas")
        return {
            str(q.pk): {
                "classes": [c.pk for c in q.allowed_service_classes.all()],
                "flavors": [quota.flavor_id for quota in q.quotas.all()],
            }
            for q in queues
        }


def initial_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """The Advanced fields' values for a stored spec (a copy of a job)."""
    initial: dict[str, Any] = {}
    for name in ADVANCED_FIELDS:
        value = job_spec.value(spec, name)
        if name in LINES:
            value = LINES[name][1](value)
        elif name == "args":
            value = shlex.join(value)
        if value:
            initial[name] = value
    return initial

"""The job submission form: every field validated with a message naming what to fix."""

from __future__ import annotations

import shlex
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from gpuplatform import access
from queues.models import Flavor, Queue, ServiceClass
from queues.models.validators import dns_label
from queues.services.snapshot import TOPOLOGY_LEVELS

FALLBACKS = ("fallback_1", "fallback_2")
MAX_WORKERS = 1024
MAX_GPUS_PER_WORKER = 64
MAX_RUNTIME_MINUTES = 60 * 24 * 30


class QueueChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Any) -> str:
        return f"{obj.team.name}/{obj.name}"


class SubmitForm(forms.Form):
    queue = QueueChoiceField(queryset=Queue.objects.none(), help_text="Your teams' open queues.")
    service_class = forms.ModelChoiceField(
        queryset=ServiceClass.objects.all(),
        help_text="Priority and protection; only the classes the queue allows are accepted.",
    )
    name = forms.CharField(
        max_length=63,
        validators=[dns_label],
        help_text="Lowercase letters, digits and hyphens, e.g. resnet-train.",
    )
    image = forms.CharField(max_length=500, help_text="Container image, e.g. pytorch/pytorch:2.4.")
    command = forms.CharField(
        required=False,
        max_length=2000,
        help_text='Split like a shell, e.g. python train.py --epochs "3".',
    )
    workers = forms.IntegerField(
        min_value=1, max_value=MAX_WORKERS, initial=1, help_text="Gang size: all start or none."
    )
    gpus_per_worker = forms.IntegerField(
        label="GPUs per worker", min_value=1, max_value=MAX_GPUS_PER_WORKER, initial=1
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
        min_value=1,
        max_value=MAX_WORKERS,
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
        min_value=1,
        max_value=MAX_RUNTIME_MINUTES,
        help_text="Lets the job start early in gaps (backfill) when it is short.",
    )

    def __init__(self, *args: Any, user: Any, for_estimate: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.user = user
        queues = access.submittable_queues(user).select_related("team").order_by("team__name")
        self.fields["queue"].queryset = queues
        flavors = Flavor.objects.filter(quotas__queue__in=queues).distinct().order_by("name")
        for name in ("flavor", *FALLBACKS):
            self.fields[name].queryset = flavors
        if for_estimate:  # the live estimate needs only what decides where the job goes
            for name in ("name", "image"):
                self.fields[name].required = False

    def clean_command(self) -> list[str]:
        text = self.cleaned_data.get("command", "")
        try:
            return shlex.split(text)
        except ValueError as error:
            raise ValidationError(f"The command cannot be split like a shell: {error}.") from None

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        queue: Queue | None = data.get("queue")
        service_class: ServiceClass | None = data.get("service_class")
        if queue is not None and service_class is not None:
            allowed = list(queue.allowed_service_classes.all())
            if allowed and service_class not in allowed:
                names = ", ".join(c.name for c in allowed)
                self.add_error(
                    "service_class",
                    f"Queue {queue} does not accept class {service_class.name}; it accepts: "
                    f"{names}.",
                )
        chosen = self.flavor_list()
        if queue is not None and chosen:
            with_quota = {q.flavor_id: q for q in queue.quotas.all()}
            names = ", ".join(sorted(q.flavor.name for q in queue.quotas.select_related("flavor")))
            for name in ("flavor", *FALLBACKS):
                flavor = data.get(name)
                if flavor is not None and flavor.pk not in with_quota:
                    self.add_error(
                        name,
                        f"Queue {queue} has no quota for {flavor.name}; it has: {names or 'none'}.",
                    )
        seen: set[int] = set()
        for name in ("flavor", *FALLBACKS):
            flavor = data.get(name)
            if flavor is not None:
                if flavor.pk in seen:
                    self.add_error(name, f"{flavor.name} is already in the list; pick another.")
                seen.add(flavor.pk)
        workers, min_workers = data.get("workers"), data.get("min_workers")
        if workers is not None and min_workers is not None and min_workers > workers:
            self.add_error(
                "min_workers",
                f"The elastic minimum ({min_workers}) cannot exceed the workers ({workers}).",
            )
        level, mode = data.get("topology_level"), data.get("topology_mode")
        if level and not mode:
            self.add_error("topology_mode", f"Say whether {level} is required or preferred.")
        if mode and not level:
            self.add_error("topology_level", "Choose the level the mode applies to.")
        return data

    def flavor_list(self) -> list[Flavor]:
        """The chosen flavor and its fallbacks, in order of preference."""
        data = getattr(self, "cleaned_data", {})
        return [data[n] for n in ("flavor", *FALLBACKS) if data.get(n) is not None]

    def topology(self) -> tuple[str, str] | None:
        level = self.cleaned_data.get("topology_level")
        return (level, self.cleaned_data["topology_mode"]) if level else None

    def runtime_seconds(self) -> int | None:
        minutes = self.cleaned_data.get("estimated_runtime")
        return minutes * 60 if minutes else None

    def queue_info(self) -> dict[str, Any]:
        """For the page's script: queue id -> the class ids it accepts and the flavor ids it has
        a quota for (the form narrows its choices as the queue changes)."""
        queues = self.fields["queue"].queryset.prefetch_related("allowed_service_classes", "quotas")
        return {
            str(q.pk): {
                "classes": [c.pk for c in q.allowed_service_classes.all()],
                "flavors": [quota.flavor_id for quota in q.quotas.all()],
            }
            for q in queues
        }

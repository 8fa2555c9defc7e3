"""Forms of the platform admin pages (and the team admins' membership page)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model
from django.core import validators

from gpuplatform.rest import MAX_INT
from queues.models import (
    Cluster,
    Cohort,
    CohortQuota,
    Flavor,
    Membership,
    Queue,
    Quota,
    ServiceClass,
    Team,
)


class TeamForm(forms.ModelForm):
    class Meta:
        model = Team
        fields = list(Team.AUDITED_FIELDS)


class MembershipForm(forms.ModelForm):
    user = forms.ModelChoiceField(queryset=get_user_model().objects.order_by("username"))

    class Meta:
        model = Membership
        fields = ["user", "role"]


MembershipFormSet = forms.inlineformset_factory(
    Team, Membership, form=MembershipForm, extra=1, can_delete=True
)


class CohortForm(forms.ModelForm):
    class Meta:
        model = Cohort
        fields = list(Cohort.AUDITED_FIELDS)


class ServiceClassForm(forms.ModelForm):
    class Meta:
        model = ServiceClass
        fields = list(ServiceClass.AUDITED_FIELDS)


class FlavorForm(forms.ModelForm):
    class Meta:
        model = Flavor
        fields = list(Flavor.AUDITED_FIELDS)


class ClusterForm(forms.ModelForm):
    """Connection settings are write-only: the token is never rendered back; blank keeps it."""

    token = forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text="Service-account bearer token. Never shown again; leave blank to keep the "
        "current one.",
    )
    clear_token = forms.BooleanField(required=False, label="Remove the stored token")
    api_url = forms.URLField(
        required=False, assume_scheme="https", label="API server URL",
        help_text="Kubernetes API server URL, e.g. https://k8s.example.org:6443.",
    )  # fmt: skip

    class Meta:
        model = Cluster
        fields = [
            "name",
            "driver",
            "in_cluster",
            "api_url",
            "token",
            "kubeconfig_path",
            "kubeconfig_context",
            "verify_tls",
            "ca_cert",
        ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.initial["token"] = ""
        self._stored_token = self.instance.token if self.instance.pk else ""
        if self._stored_token:
            self.fields["token"].help_text = "A token is stored. " + str(
                self.fields["token"].help_text
            )

    def clean_token(self) -> str:
        token: str = self.cleaned_data.get("token") or ""
        if self.data.get(self.add_prefix("clear_token")):
            return ""
        return token or self._stored_token


class QueueForm(forms.ModelForm):
    class Meta:
        model = Queue
        fields = list(Queue.AUDITED_FIELDS)
        widgets = {"allowed_service_classes": forms.CheckboxSelectMultiple}


class BoundedQuotaForm(forms.ModelForm):
    """A quota row's numbers bounded as the REST API bounds them (``gpuplatform.rest.MAX_INT``,
    a PostgreSQL integer), whatever the database in use."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for field in self.fields.values():
            if not isinstance(field, forms.IntegerField):
                continue
            field.max_value = MAX_INT
            field.validators.append(validators.MaxValueValidator(MAX_INT))
            field.widget.attrs["max"] = MAX_INT


class QuotaForm(BoundedQuotaForm):
    class Meta:
        model = Quota
        fields = list(Quota.AUDITED_FIELDS)


class BaseQuotaFormSet(forms.BaseInlineFormSet):
    def clean(self) -> None:
        super().clean()
        seen: set[int] = set()
        for form in self.forms:
            if not hasattr(form, "cleaned_data") or form.cleaned_data.get("DELETE"):
                continue
            flavor = form.cleaned_data.get("flavor")
            if flavor is None:
                continue
            if flavor.pk in seen:
                form.add_error("flavor", f"{flavor.name} has a row already; edit that one.")
            seen.add(flavor.pk)


QuotaFormSet = forms.inlineformset_factory(
    Queue, Quota, form=QuotaForm, formset=BaseQuotaFormSet, extra=1, can_delete=True
)


class CohortQuotaForm(BoundedQuotaForm):
    class Meta:
        model = CohortQuota
        fields = list(CohortQuota.AUDITED_FIELDS)


CohortQuotaFormSet = forms.inlineformset_factory(
    Cohort, CohortQuota, form=CohortQuotaForm, formset=BaseQuotaFormSet, extra=1, can_delete=True
)


def new_nominals(formset: Any) -> dict[int, int]:
    """flavor id -> the nominal a quota formset (a queue's or a cohort's) would save (0 for
    rows being deleted)."""
    out: dict[int, int] = {}
    for form in formset.forms:
        data = getattr(form, "cleaned_data", None)
        if not data or data.get("flavor") is None:
            if form.instance.pk and data and data.get("DELETE"):
                out[form.instance.flavor_id] = 0
            continue
        flavor_id = data["flavor"].pk
        if data.get("DELETE"):
            out.setdefault(flavor_id, 0)
        else:
            out[flavor_id] = data["nominal"]
        if form.instance.pk and form.instance.flavor_id != flavor_id:
            out.setdefault(form.instance.flavor_id, 0)  # the row moved to another flavor
    return out

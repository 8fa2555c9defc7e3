"""Forms of the prices page: a new flavor price row and a new class multiplier row.

Rows are only ever added (docs/ACCOUNTING.md "Prices"); these forms validate one new row. A date
in the past is valid here; the page asks for a confirmation before saving it (see
``accounting.views.prices_page``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from django import forms
from django.utils import timezone

from accounting.models import ClassMultiplier, FlavorPrice
from accounting.pricing import currency
from queues.models import Flavor, ServiceClass

DATETIME_FORMAT = "%Y-%m-%d %H:%M:%S"
EFFECTIVE_FROM_HELP = (
    "UTC, e.g. 2026-05-01 00:00. The row applies from this moment until the next row. "
    "Defaults to now."
)


def now_to_the_second() -> datetime:
    return timezone.now().astimezone(UTC).replace(microsecond=0)


class NewRowForm(forms.ModelForm):
    """Shared by both forms: `effective_from` in UTC (default now) and the moment the form was
    shown (hidden `shown_at`), which tells a date the admin typed in the past from the default
    "now" that is a few seconds old by the time it is posted."""

    shown_at = forms.DateTimeField(widget=forms.HiddenInput, required=False)
    owner_field: str = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        now = now_to_the_second()
        field = self.fields["effective_from"]
        field.widget = forms.DateTimeInput(format=DATETIME_FORMAT)
        field.help_text = EFFECTIVE_FROM_HELP
        field.label = "Effective from (UTC)"
        field.initial = now
        self.fields["shown_at"].initial = now
        self.fields["shown_at"].widget.format = DATETIME_FORMAT

    def clean_effective_from(self) -> datetime:
        value: datetime = self.cleaned_data["effective_from"]
        if timezone.is_naive(value):  # parsed values are made aware in TIME_ZONE (UTC) already
            value = value.replace(tzinfo=UTC)
        return value.astimezone(UTC)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        owner, moment = cleaned.get(self.owner_field), cleaned.get("effective_from")
        if owner is not None and moment is not None:
            model = self._meta.model
            if model._default_manager.filter(
                **{self.owner_field: owner, "effective_from": moment}
            ).exists():
                self.add_error(
                    "effective_from",
                    f"{owner} already has a row effective from {moment:%Y-%m-%d %H:%M:%S} UTC. "
                    "Rows are never edited: pick another moment for the new row.",
                )
        return cleaned

    def is_in_the_past(self) -> bool:
        """Whether the (valid) effective date lies before the moment the form was shown."""
        shown_at = self.cleaned_data.get("shown_at") or timezone.now()
        return bool(self.cleaned_data["effective_from"] < min(shown_at, timezone.now()))


class FlavorPriceForm(NewRowForm):
    owner_field = "flavor"

    class Meta:
        model = FlavorPrice
        fields = ["flavor", "price_per_unit_hour", "currency", "effective_from"]
        labels = {"price_per_unit_hour": "Price per unit-hour"}
        help_texts = {
            "flavor": "A MIG flavor without a price of its own is priced from its whole GPU.",
            "price_per_unit_hour": "Per GPU (or MIG slice) and hour, up to 6 decimal places.",
            "currency": "Every price is in the same currency (ACCOUNTING_CURRENCY).",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["flavor"].queryset = Flavor.objects.order_by("name")
        self.fields["currency"].initial = currency()

    def clean_price_per_unit_hour(self) -> Decimal:
        value: Decimal = self.cleaned_data["price_per_unit_hour"]
        if value <= 0:
            raise forms.ValidationError("A price must be more than 0.")
        return value

    def clean_currency(self) -> str:
        value = self.cleaned_data["currency"].strip().upper()
        in_use = sorted(set(FlavorPrice.objects.values_list("currency", flat=True)) - {value})
        if in_use:
            raise forms.ValidationError(
                f"The price list is in {', '.join(in_use)}; a price in {value} would mix "
                "currencies, which is refused. Enter the price in "
                f"{' / '.join(in_use)}."
            )
        if value != currency():
            raise forms.ValidationError(
                f"Prices are kept in {currency()} (the ACCOUNTING_CURRENCY setting), not {value}."
            )
        return value


class ClassMultiplierForm(NewRowForm):
    owner_field = "service_class"

    class Meta:
        model = ClassMultiplier
        fields = ["service_class", "multiplier", "effective_from"]
        help_texts = {
            "multiplier": "Factor on the flavor price for jobs of this class, e.g. 0.5 or 1.25 "
            "(up to 3 decimal places; 0 makes the class free).",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["service_class"].queryset = ServiceClass.objects.order_by("name")

    def clean_multiplier(self) -> Decimal:
        value: Decimal = self.cleaned_data["multiplier"]
        if value < 0:
            raise forms.ValidationError("A multiplier cannot be negative.")
        return value

"""Name validators shared by the domain models (names end up in Kubernetes objects and labels)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator

dns_label = RegexValidator(
    r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\Z",
    "Use lowercase letters, digits and hyphens, starting and ending with a letter or digit "
    "(at most 63 characters), for example 'team-a'.",
)

dotted_name = RegexValidator(
    r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?\Z",
    "Use lowercase letters, digits, hyphens and dots, starting and ending with a letter or digit, "
    "for example 'h100-1g.10gb'.",
)

resource_name = RegexValidator(
    r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?/[a-zA-Z0-9]([a-zA-Z0-9._-]*[a-zA-Z0-9])?\Z",
    "Use a Kubernetes extended resource name such as 'nvidia.com/gpu' or 'nvidia.com/mig-1g.10gb'.",
)


def validate_string_map(value: Any, what: str) -> None:
    """A JSON object whose keys and values are all strings (node labels, node selectors)."""
    if not isinstance(value, dict):
        raise ValidationError(
            f'{what} must be an object of name: value pairs, e.g. {{"zone": "a"}}.'
        )
    for key, item in value.items():
        if not isinstance(key, str) or not isinstance(item, str):
            raise ValidationError(f"{what}: {key!r}: {item!r} is not a text name: text value pair.")

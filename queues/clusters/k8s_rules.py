"""Kubernetes' own rules for the names and values a job spec carries, as the API server checks
them (k8s.io/apimachinery validation): pure functions that return the problem in words, or
``""`` when the value is valid. The submission rules (queues/models/job_spec.py) and the
driver's last check (manifests.validate_spec) both use them, so a job the platform accepts is
one the API server accepts.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

DNS_LABEL_MAX = 63
DNS_SUBDOMAIN_MAX = 253
LABEL_VALUE_MAX = 63
PATH_MAX = 4096

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
# resource.Quantity: a signed decimal number and an optional binary, decimal or exponent suffix
_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$"
)
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}

TOLERATION_OPERATORS = ("Exists", "Equal")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
EMPTY_DIR_MEDIA = ("", "Memory")


def dns_label(text: str) -> str:
    """A DNS-1123 label: a volume name."""
    if len(text) > DNS_LABEL_MAX:
        return f"at most {DNS_LABEL_MAX} characters"
    if not _DNS_LABEL.match(text):
        return (
            f"{text!r} is not a DNS label (lowercase letters, digits and '-', starting and "
            "ending with a letter or digit)"
        )
    return ""


def dns_subdomain(text: str) -> str:
    """A DNS-1123 subdomain: the name of a PVC, ConfigMap or Secret."""
    if len(text) > DNS_SUBDOMAIN_MAX:
        return f"at most {DNS_SUBDOMAIN_MAX} characters"
    if not _DNS_SUBDOMAIN.match(text):
        return (
            f"{text!r} is not a valid object name (lowercase letters, digits, '-' and '.', "
            "starting and ending with a letter or digit)"
        )
    return ""


def env_name(text: str) -> str:
    if not ENV_NAME.match(text):
        return (
            f"{text!r} is not a valid environment variable name (letters, digits, '_', '-' and "
            "'.', not starting with a digit)"
        )
    return ""


def config_key(text: str) -> str:
    """A key of a Secret or ConfigMap."""
    if len(text) > DNS_SUBDOMAIN_MAX or not _CONFIG_KEY.match(text):
        return f"{text!r} is not a valid key (letters, digits, '-', '_' and '.')"
    return ""


def qualified_name(text: str) -> str:
    """A label or annotation key: an optional DNS subdomain prefix and '/', then a name of at
    most 63 characters."""
    prefix, slash, name = text.rpartition("/")
    if slash and (not prefix or dns_subdomain(prefix)):
        return f"{text!r}: the prefix before '/' must be a DNS subdomain, e.g. example.com"
    if len(name) > DNS_LABEL_MAX or not _QUALIFIED_NAME.match(name):
        return (
            f"{text!r} is not a valid key (an optional prefix and '/', then at most "
            f"{DNS_LABEL_MAX} letters, digits, '-', '_' or '.', starting and ending with a "
            "letter or digit)"
        )
    return ""


def label_value(text: str) -> str:
    if len(text) > LABEL_VALUE_MAX or not _LABEL_VALUE.match(text):
        return (
            f"{text!r} is not a valid label value (at most {LABEL_VALUE_MAX} letters, digits, "
            "'-', '_' or '.', starting and ending with a letter or digit)"
        )
    return ""


def quantity(text: str) -> Decimal | None:
    """The value of a Kubernetes quantity ("500m", "16Gi", "1.5"), or None if it is not one."""
    match = _QUANTITY.match(text)
    if match is None:
        return None
    try:
        number = Decimal(match["number"])
    except InvalidOperation:
        return None
    suffix = match["suffix"] or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number.scaleb(_DECIMAL[suffix])
    return number.scaleb(int(suffix[1:]))


def positive_quantity(text: str, example: str) -> str:
    value = quantity(text)
    if value is None:
        return f"{text!r} is not a Kubernetes quantity (e.g. {example})"
    if value <= 0:
        return f"must be greater than 0, not {text!r}"
    return ""


def absolute_path(text: str) -> str:
    """A mount path or working directory: absolute, without '..' and NUL."""
    if not text.startswith("/"):
        return f"{text!r} is not an absolute path (it starts with '/')"
    if len(text) > PATH_MAX:
        return f"at most {PATH_MAX} characters"
    if "\x00" in text:
        return "the NUL character is not allowed"
    if ".." in text.split("/"):
        return f"{text!r} must not contain '..'"
    return ""


def toleration(key: str, operator: str, value: str, effect: str, seconds: int | None) -> str:
    """One toleration, as the API server validates it (core/v1 validateTolerations)."""
    if key and (problem := qualified_name(key)):
        return f"key: {problem}"
    if operator not in ("", *TOLERATION_OPERATORS):
        return f"operator: {operator!r} is not Exists or Equal"
    if not key and operator != "Exists":
        return "operator: must be Exists when the key is empty (it then tolerates every taint)"
    if operator == "Exists" and value:
        return "value: must be empty when the operator is Exists"
    if value and (problem := label_value(value)):
        return f"value: {problem}"
    if effect not in ("", *TAINT_EFFECTS):
        return f"effect: {effect!r} is not one of {', '.join(TAINT_EFFECTS)} (or empty: all)"
    if seconds is not None and effect != "NoExecute":
        return "tolerationSeconds: only with the NoExecute effect"
    return ""

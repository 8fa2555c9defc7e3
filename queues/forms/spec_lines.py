"""The submit form's Advanced section writes a job's spec as lines of text; this turns the lines
into the spec's values (the REST API's shapes, which queues/models/job_spec.py checks) and a
job's spec back into lines ("Submit a copy"). Only the line format is checked here: a line that
does not parse names its number; every rule about the values is job_spec's.

- env: ``NAME=value`` or ``NAME from secret SECRET/KEY``;
- volumes: ``pvc:CLAIM /path [ro]``, ``configmap:NAME /path [ro]``, ``secret:NAME /path [ro]``,
  ``emptydir[:Memory][:SIZE] /path``;
- tolerations: ``KEY=VALUE:EFFECT``, ``KEY:EFFECT`` (operator Exists), ``KEY=VALUE`` or ``KEY``
  (any effect);
- labels and annotations: ``key=value``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from django.core.exceptions import ValidationError

from queues.clusters import k8s_rules

_SECRET_ENV = re.compile(r"^(?P<name>[^=\s]+)\s+from\s+secret\s+(?P<secret>[^/\s]+)/(?P<key>\S+)$")
KINDS = {"pvc": "persistentVolumeClaim", "configmap": "configMap", "secret": "secret"}
SOURCE_KEY = {"persistentVolumeClaim": "claimName", "configMap": "name", "secret": "secretName"}


def _lines(text: str) -> list[tuple[int, str]]:
    return [
        (number, line.strip())
        for number, line in enumerate(text.splitlines(), start=1)
        if line.strip() and not line.strip().startswith("#")
    ]


def _parse(text: str, parse_line: Callable[[str], Any], expected: str) -> list[Any]:
    items, errors = [], []
    for number, line in _lines(text):
        item = parse_line(line)
        if item is None:
            errors.append(f"Line {number}: {line!r} is not {expected}.")
        else:
            items.append(item)
    if errors:
        raise ValidationError(errors)
    return items


def parse_env(text: str) -> list[dict[str, Any]]:
    def line(text: str) -> dict[str, Any] | None:
        if match := _SECRET_ENV.match(text):
            ref = {"name": match["secret"], "key": match["key"]}
            return {"name": match["name"], "valueFrom": {"secretKeyRef": ref}}
        name, equals, value = text.partition("=")
        return {"name": name.strip(), "value": value.strip()} if equals else None

    return _parse(text, line, "NAME=value or NAME from secret SECRET/KEY")


def format_env(env: list[dict[str, Any]]) -> str:
    lines = []
    for var in env:
        ref = var.get("valueFrom", {}).get("secretKeyRef")
        if ref:
            lines.append(f"{var['name']} from secret {ref['name']}/{ref['key']}")
        else:
            lines.append(f"{var['name']}={var.get('value', '')}")
    return "\n".join(lines)


def parse_volumes(text: str) -> list[dict[str, Any]]:
    used: set[str] = set()

    def line(text: str) -> dict[str, Any] | None:
        words = text.split()
        if len(words) not in (2, 3) or (len(words) == 3 and words[2] != "ro"):
            return None
        kind, _, rest = words[0].partition(":")
        kind = kind.lower()
        if kind == "emptydir":
            source: dict[str, Any] = {}
            for option in filter(None, rest.split(":")):
                source["medium" if option == "Memory" else "sizeLimit"] = option
            name = f"emptydir-{len(used) + 1}"
        elif kind in KINDS and rest:
            source = {SOURCE_KEY[KINDS[kind]]: rest}
            name = rest if not k8s_rules.dns_label(rest) else f"{kind}-{len(used) + 1}"
        else:
            return None
        while name in used:
            name = f"{name}-{len(used) + 1}"
        used.add(name)
        return {
            "name": name,
            "mountPath": words[1],
            "readOnly": len(words) == 3,
            KINDS.get(kind, "emptyDir"): source,
        }

    return _parse(
        text, line, "pvc:CLAIM /path [ro], configmap:NAME /path [ro], secret:NAME /path [ro] or "
        "emptydir[:Memory][:SIZE] /path"
    )  # fmt: skip


def format_volumes(volumes: list[dict[str, Any]]) -> str:
    lines = []
    for volume in volumes:
        ro = " ro" if volume.get("readOnly") else ""
        if "emptyDir" in volume:
            options = [volume["emptyDir"].get(k, "") for k in ("medium", "sizeLimit")]
            kind = ":".join(["emptydir", *filter(None, options)])
            lines.append(f"{kind} {volume['mountPath']}{ro}")
            continue
        for short, kind in KINDS.items():
            if kind in volume:
                lines.append(f"{short}:{volume[kind][SOURCE_KEY[kind]]} {volume['mountPath']}{ro}")
    return "\n".join(lines)


def parse_tolerations(text: str) -> list[dict[str, Any]]:
    def line(text: str) -> dict[str, Any] | None:
        if " " in text:
            return None
        head, colon, effect = text.rpartition(":")
        if not colon:
            head, effect = text, ""
        key, equals, value = head.partition("=")
        item = {"key": key, "operator": "Equal" if equals else "Exists", "value": value}
        return item | ({"effect": effect} if effect else {})

    return _parse(text, line, "KEY=VALUE:EFFECT, KEY:EFFECT, KEY=VALUE or KEY")


def format_tolerations(tolerations: list[dict[str, Any]]) -> str:
    lines = []
    for item in tolerations:
        text = item.get("key", "")
        if item.get("operator") != "Exists":
            text += f"={item.get('value', '')}"
        if item.get("effect"):
            text += f":{item['effect']}"
        lines.append(text)
    return "\n".join(lines)


def parse_pairs(text: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for key, value in _parse(text, _pair, "key=value"):
        pairs[key] = value
    return pairs


def _pair(text: str) -> tuple[str, str] | None:
    key, equals, value = text.partition("=")
    return (key.strip(), value.strip()) if equals and key.strip() else None


def format_pairs(pairs: dict[str, str]) -> str:
    return "\n".join(f"{key}={value}" for key, value in pairs.items())

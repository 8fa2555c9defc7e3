"""A job's spec beyond image, command and GPUs: its rules, its stored form, its way to the driver.

The spec is one JSON object (``Job.spec``) with these keys, each optional; the REST API takes
them as top-level keys of a submission, the submit form in its Advanced section, and a pod
template (queues/models/pod_template.py) is turned into them:

- ``args``: the container's arguments (after the command);
- ``env``: ``[{"name": N, "value": V}]`` or ``[{"name": N, "valueFrom": {"secretKeyRef":
  {"name": SECRET, "key": KEY}}}]``; the platform's names (manifests.PLATFORM_ENV) are refused;
- ``volumes``: ``[{"name": N, "mountPath": P, "readOnly": bool, KIND: {...}}]`` with KIND one of
  ``persistentVolumeClaim`` (``claimName``), ``configMap`` (``name``), ``secret``
  (``secretName``), ``emptyDir`` (optional ``medium`` Memory and ``sizeLimit``);
- ``shm_size``: a quantity: /dev/shm becomes an emptyDir of medium Memory of that size;
- ``cpu``, ``memory``: requests per worker; ``cpu_limit``, ``memory_limit``: the limits (by
  default the requests; never below them);
- ``image_pull_secret``, ``working_dir``, ``tolerations`` (as Kubernetes writes them),
  ``labels`` and ``annotations`` (never the platform's or Kueue's keys), ``host_network`` (only
  in a service class that allows it).

``resolve`` checks a submission's spec (and pod template) and returns it normalized, with every
problem as ``(field, "path: message")``: the field is the submission's (``env``, ``volumes``...,
or ``pod_template`` for what a template said), the path the exact place
(``env[0].name``, ``pod_template.spec.volumes[0].hostPath``). job_rules.py adds them to the
submission's problems: the form, the REST API and the estimates all get them from there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from queues.clusters import k8s_rules
from queues.clusters.base import EnvVar, Resources, Toleration, Volume, VolumeKind
from queues.clusters.manifests import PLATFORM_ENV, SHM_PATH, SHM_VOLUME, reserved_key

LISTS = ("args", "env", "volumes", "tolerations")
MAPS = ("labels", "annotations")
QUANTITIES = {
    "shm_size": "16Gi",
    "cpu": "8 or 500m",
    "memory": "64Gi",
    "cpu_limit": "8",
    "memory_limit": "64Gi",
}
TEXTS = ("image_pull_secret", "working_dir")
SPEC_FIELDS = ("args", "env", "volumes", *QUANTITIES, *TEXTS, "tolerations", *MAPS, "host_network")
MAX_ITEMS = {"args": 256, "env": 200, "volumes": 50, "tolerations": 50}
MAX_ARG = 4096
MAX_ENV_VALUE = 32_768
MAX_KEYS = 64
MAX_ANNOTATIONS = 256 * 1024  # Kubernetes' limit for all of an object's annotations
VOLUME_KINDS = {kind.value: kind for kind in VolumeKind}
VOLUME_SOURCE_KEYS = {
    "persistentVolumeClaim": ("claimName", "readOnly"),
    "configMap": ("name",),
    "secret": ("secretName",),
    "emptyDir": ("medium", "sizeLimit"),
}
FORBIDDEN_VOLUMES = ("hostPath",)


def default(name: str) -> Any:
    """The value of a spec key that was not given."""
    if name in LISTS:
        return []
    if name in MAPS:
        return {}
    return False if name == "host_network" else ""


def value(spec: Mapping[str, Any], name: str) -> Any:
    return spec.get(name, default(name))


class Origin:
    """Where each value of a spec came from, for its errors: by default the spec's own names
    (``env[0]``); ``paths`` maps them to a pod template's (``pod_template.spec.containers[0]
    .env[0]``); a volume's mount has its own path under ``volumes[i]@mount``."""

    def __init__(self, paths: Mapping[str, str] | None = None) -> None:
        self.paths = dict(paths or {})

    def at(self, where: str) -> tuple[str, str]:
        """(the submission field, the path) of the value at ``where``."""
        if where in self.paths:
            return "pod_template", self.paths[where]
        base = re.match(r"[a-z_]+", where)
        return (base.group(0) if base else where), where.replace("@mount", "")


@dataclass
class Cleaned:
    """A spec checked: ``spec`` normalized (only the keys given), ``problems`` by field."""

    spec: dict[str, Any] = field(default_factory=dict)
    problems: list[tuple[str, str]] = field(default_factory=list)


class _Cleaner:
    def __init__(self, origin: Origin) -> None:
        self.origin = origin
        self.out = Cleaned()

    def bad(self, where: str, message: str, key: str = "") -> None:
        name, path = self.origin.at(where)
        self.out.problems.append((name, f"{path}{'.' + key if key else ''}: {message}"))

    def text(self, where: str, key: str, raw: Any, *, required: bool = True) -> str | None:
        if raw is None and not required:
            return ""
        if not isinstance(raw, str) or (required and not raw):
            self.bad(where, "give a text value" if raw in (None, "") else "must be text", key)
            return None
        if "\x00" in raw:
            self.bad(where, "the NUL character is not allowed", key)
            return None
        return raw

    def keys(
        self, where: str, raw: Mapping[str, Any], allowed: tuple[str, ...], sub: str = ""
    ) -> bool:
        unknown = [k for k in raw if k not in allowed]
        for key in unknown:
            self.bad(where, "not supported", f"{sub}.{key}" if sub else str(key))
        return not unknown

    def items(self, name: str, raw: Any) -> list[Any]:
        if not isinstance(raw, list):
            self.bad(name, "must be a list")
            return []
        if len(raw) > MAX_ITEMS[name]:
            self.bad(name, f"at most {MAX_ITEMS[name]} items; there are {len(raw)}")
            return []
        return raw

    # --- the fields --------------------------------------------------------------------------

    def args(self, raw: Any) -> None:
        words = self.items("args", raw)
        if any(not isinstance(w, str) for w in words):
            self.bad("args", 'must be a list of strings, e.g. ["--epochs", "3"]')
        elif any(len(w) > MAX_ARG or "\x00" in w for w in words):
            self.bad("args", f"each argument has at most {MAX_ARG} characters, without NUL")
        elif words:
            self.out.spec["args"] = list(words)

    def env(self, raw: Any) -> None:
        seen: set[str] = set()
        clean: list[dict[str, Any]] = []
        for index, item in enumerate(self.items("env", raw)):
            where = f"env[{index}]"
            if not isinstance(item, dict):
                self.bad(where, "must be an object with a name and a value (or valueFrom)")
                continue
            if not self.keys(where, item, ("name", "value", "valueFrom")):
                continue
            name = self.text(where, "name", item.get("name"))
            if name is None:
                continue
            if problem := k8s_rules.env_name(name):
                self.bad(where, problem, "name")
                continue
            if name in PLATFORM_ENV:
                self.bad(where, f"{name} is set by the platform (for distributed training)", "name")
                continue
            if name in seen:
                self.bad(where, f"{name} is set twice", "name")
                continue
            seen.add(name)
            if "valueFrom" in item:
                ref = self.secret_ref(where, item)
                if ref is not None:
                    clean.append({"name": name, "valueFrom": {"secretKeyRef": ref}})
                continue
            text = self.text(where, "value", item.get("value", ""), required=False)
            if text is not None and len(text) > MAX_ENV_VALUE:
                self.bad(where, f"at most {MAX_ENV_VALUE} characters", "value")
            elif text is not None:
                clean.append({"name": name, "value": text})
        if clean:
            self.out.spec["env"] = clean

    def secret_ref(self, where: str, item: dict[str, Any]) -> dict[str, str] | None:
        if "value" in item:
            self.bad(where, "give a value or valueFrom, not both", "valueFrom")
            return None
        source = item["valueFrom"]
        if not isinstance(source, dict) or "secretKeyRef" not in source:
            self.bad(where, "only secretKeyRef (a key of a Secret) is supported", "valueFrom")
            return None
        ref = source["secretKeyRef"]
        if not self.keys(where, source, ("secretKeyRef",), "valueFrom"):
            return None
        if not isinstance(ref, dict):
            self.bad(where, "must be an object with name and key", "valueFrom.secretKeyRef")
            return None
        if not self.keys(where, ref, ("name", "key"), "valueFrom.secretKeyRef"):
            return None
        secret = self.text(where, "valueFrom.secretKeyRef.name", ref.get("name"))
        key = self.text(where, "valueFrom.secretKeyRef.key", ref.get("key"))
        if secret is None or key is None:
            return None
        if problem := k8s_rules.dns_subdomain(secret):
            self.bad(where, problem, "valueFrom.secretKeyRef.name")
        elif problem := k8s_rules.config_key(key):
            self.bad(where, problem, "valueFrom.secretKeyRef.key")
        else:
            return {"name": secret, "key": key}
        return None

    def volumes(self, raw: Any, shm: bool) -> None:
        names: set[str] = set()
        paths: set[str] = set()
        clean: list[dict[str, Any]] = []
        for index, item in enumerate(self.items("volumes", raw)):
            where, mount = f"volumes[{index}]", f"volumes[{index}]@mount"
            if not isinstance(item, dict):
                self.bad(where, "must be an object with a name, a mountPath and one source")
                continue
            volume = self.volume(where, mount, item, shm)
            if volume is None:
                continue
            if volume["name"] in names:
                self.bad(where, f"{volume['name']} is used twice", "name")
            elif volume["mountPath"] in paths:
                self.bad(mount, f"{volume['mountPath']} is mounted twice", "mountPath")
            else:
                names.add(volume["name"])
                paths.add(volume["mountPath"])
                clean.append(volume)
        if clean:
            self.out.spec["volumes"] = clean

    def volume(self, where: str, mount: str, item: dict[str, Any], shm: bool) -> Any:
        for kind in FORBIDDEN_VOLUMES:
            if kind in item:
                self.bad(where, "not allowed (the platform mounts no node paths)", kind)
                return None
        allowed = ("name", "mountPath", "readOnly", *VOLUME_SOURCE_KEYS)
        if not self.keys(where, item, allowed):
            return None
        kinds = [k for k in VOLUME_SOURCE_KEYS if k in item]
        if len(kinds) != 1:
            options = ", ".join(VOLUME_SOURCE_KEYS)
            self.bad(where, f"give exactly one source: {options}")
            return None
        name = self.text(where, "name", item.get("name"))
        path = self.text(mount, "mountPath", item.get("mountPath"))
        if name is None or path is None:
            return None
        if problem := k8s_rules.dns_label(name):
            self.bad(where, problem, "name")
            return None
        if name == SHM_VOLUME:
            self.bad(where, f"{SHM_VOLUME} is the platform's (shm_size)", "name")
            return None
        if problem := k8s_rules.absolute_path(path):
            self.bad(mount, problem, "mountPath")
            return None
        if shm and (path == SHM_PATH or path.startswith(SHM_PATH + "/")):
            self.bad(mount, f"shm_size mounts {SHM_PATH} already", "mountPath")
            return None
        read_only = item.get("readOnly", False)
        if not isinstance(read_only, bool):
            self.bad(mount, "must be true or false", "readOnly")
            return None
        kind = kinds[0]
        source = self.volume_source(where, kind, item[kind])
        if source is None:
            return None
        read_only = read_only or bool(source.pop("readOnly", False))
        return {"name": name, "mountPath": path, "readOnly": read_only, kind: source}

    def volume_source(self, where: str, kind: str, raw: Any) -> dict[str, Any] | None:
        if raw is None and kind == "emptyDir":
            raw = {}
        if not isinstance(raw, dict):
            self.bad(where, "must be an object", kind)
            return None
        if not self.keys(where, raw, VOLUME_SOURCE_KEYS[kind], kind):
            return None
        if kind == "emptyDir":
            medium = raw.get("medium", "")
            if medium not in k8s_rules.EMPTY_DIR_MEDIA:
                self.bad(where, f"{medium!r}: empty (the node's disk) or Memory", "emptyDir.medium")
                return None
            size = self.quantity_text(raw.get("sizeLimit"))
            if size and (problem := k8s_rules.positive_quantity(size, "10Gi")):
                self.bad(where, problem, "emptyDir.sizeLimit")
                return None
            return {k: v for k, v in (("medium", medium), ("sizeLimit", size)) if v}
        key = VOLUME_SOURCE_KEYS[kind][0]
        name = self.text(where, f"{kind}.{key}", raw.get(key))
        if name is None:
            return None
        if problem := k8s_rules.dns_subdomain(name):
            self.bad(where, problem, f"{kind}.{key}")
            return None
        source: dict[str, Any] = {key: name}
        if kind == "persistentVolumeClaim" and "readOnly" in raw:
            if not isinstance(raw["readOnly"], bool):
                self.bad(where, "must be true or false", f"{kind}.readOnly")
                return None
            source["readOnly"] = raw["readOnly"]
        return source

    @staticmethod
    def quantity_text(raw: Any) -> str:
        """A quantity as text: YAML and JSON may give a number (cpu: 8)."""
        if isinstance(raw, int | float) and not isinstance(raw, bool):
            return str(raw)
        return raw if isinstance(raw, str) else ("" if raw is None else repr(raw))

    def quantities(self, raw: Mapping[str, Any]) -> None:
        values: dict[str, Any] = {}
        for name, example in QUANTITIES.items():
            if name not in raw or raw[name] in ("", None):
                continue
            text = self.quantity_text(raw[name])
            if problem := k8s_rules.positive_quantity(text, example):
                self.bad(name, problem)
                continue
            self.out.spec[name] = text
            values[name] = k8s_rules.quantity(text)
        for what in ("cpu", "memory"):
            limit, request = values.get(f"{what}_limit"), values.get(what)
            if limit is not None and request is not None and limit < request:
                self.bad(
                    f"{what}_limit",
                    f"{raw[what + '_limit']} is below the request {raw[what]}: a limit is at "
                    "least the request",
                )
        shm = values.get("shm_size")
        memory = values.get("memory_limit", values.get("memory"))
        if shm is not None and memory is not None and shm > memory:
            self.bad(
                "shm_size",
                f"{raw['shm_size']} of {SHM_PATH} is more than the memory limit "
                f"{self.out.spec.get('memory_limit') or self.out.spec['memory']} (it counts "
                "against it)",
            )

    def texts(self, raw: Mapping[str, Any]) -> None:
        for name in TEXTS:
            if raw.get(name) in ("", None):
                continue
            text = self.text(name, "", raw[name])
            if text is None:
                continue
            check = (
                k8s_rules.dns_subdomain if name == "image_pull_secret" else k8s_rules.absolute_path
            )
            if problem := check(text):
                self.bad(name, problem)
            else:
                self.out.spec[name] = text

    def tolerations(self, raw: Any) -> None:
        clean: list[dict[str, Any]] = []
        allowed = ("key", "operator", "value", "effect", "tolerationSeconds")
        for index, item in enumerate(self.items("tolerations", raw)):
            where = f"tolerations[{index}]"
            if not isinstance(item, dict):
                self.bad(where, "must be an object with key, operator, value and effect")
                continue
            if not self.keys(where, item, allowed):
                continue
            texts = [self.text(where, k, item.get(k, ""), required=False) for k in allowed[:4]]
            seconds = item.get("tolerationSeconds")
            if seconds is not None and (not isinstance(seconds, int) or isinstance(seconds, bool)):
                self.bad(where, "must be a whole number of seconds", "tolerationSeconds")
                continue
            if any(t is None for t in texts):
                continue
            key, operator, text, effect = (str(t) for t in texts)
            if problem := k8s_rules.toleration(key, operator, text, effect, seconds):
                self.bad(where, problem)
                continue
            out = {"key": key, "operator": operator or "Equal", "value": text, "effect": effect}
            clean.append(
                {k: v for k, v in out.items() if v}
                | ({} if seconds is None else {"tolerationSeconds": seconds})
            )
        if clean:
            self.out.spec["tolerations"] = clean

    def mapping(self, name: str, raw: Any) -> None:
        if not isinstance(raw, dict):
            self.bad(name, 'must be an object of key: value pairs, e.g. {"project": "llm"}')
            return
        if len(raw) > MAX_KEYS:
            self.bad(name, f"at most {MAX_KEYS} keys; there are {len(raw)}")
            return
        clean: dict[str, str] = {}
        for key, text in raw.items():
            if not isinstance(key, str) or not isinstance(text, str) or "\x00" in text + key:
                self.bad(name, f"{key!r}: keys and values must be text (without NUL)")
            elif reserved_key(key):
                self.bad(name, f"{key} is set by the platform; choose another key")
            elif problem := k8s_rules.qualified_name(key):
                self.bad(name, problem)
            elif name == "labels" and (problem := k8s_rules.label_value(text)):
                self.bad(name, f"{key}: {problem}")
            else:
                clean[key] = text
        if (
            name == "annotations"
            and sum(len(k) + len(v) for k, v in clean.items()) > MAX_ANNOTATIONS
        ):
            self.bad(name, f"at most {MAX_ANNOTATIONS} bytes in all")
        elif clean:
            self.out.spec[name] = clean

    def host_network(self, raw: Any, service_class: Any) -> None:
        if raw in (None, False):
            return
        if raw is not True:
            self.bad("host_network", "must be true or false")
        elif service_class is not None and not service_class.allow_host_network:
            self.bad(
                "host_network",
                f"not allowed: class {service_class.name} does not allow host networking",
            )
        else:
            self.out.spec["host_network"] = True


def clean(
    raw: Mapping[str, Any] | None, service_class: Any = None, origin: Origin | None = None
) -> Cleaned:
    """Check ``raw`` (a spec as the API sends it) and normalize it; ``service_class`` (when
    known) decides whether host networking is allowed."""
    cleaner = _Cleaner(origin or Origin())
    if raw is None:
        return cleaner.out
    if not isinstance(raw, Mapping):
        cleaner.bad("spec", "must be an object")
        return cleaner.out
    for name in raw:
        if name not in (*SPEC_FIELDS, "allow_privilege_escalation"):
            cleaner.bad(str(name), "not a field of a job's spec")
    present = {k: v for k, v in raw.items() if v not in (None, "", [], {})}
    if "args" in present:
        cleaner.args(present["args"])
    if "env" in present:
        cleaner.env(present["env"])
    if "volumes" in present:
        cleaner.volumes(present["volumes"], shm="shm_size" in present)
    cleaner.quantities(present)
    cleaner.texts(present)
    if "tolerations" in present:
        cleaner.tolerations(present["tolerations"])
    for name in MAPS:
        if name in present:
            cleaner.mapping(name, present[name])
    cleaner.host_network(present.get("host_network"), service_class)
    if raw.get("allow_privilege_escalation") is False:  # only a pod template says so
        cleaner.out.spec["allow_privilege_escalation"] = False
    return cleaner.out


def launch_fields(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The LaunchSpec fields of a stored (normalized) spec, typed for the driver."""
    env = tuple(
        EnvVar(
            name=var["name"],
            value=var.get("value", ""),
            secret_name=var.get("valueFrom", {}).get("secretKeyRef", {}).get("name", ""),
            secret_key=var.get("valueFrom", {}).get("secretKeyRef", {}).get("key", ""),
        )
        for var in value(spec, "env")
    )
    volumes = []
    for item in value(spec, "volumes"):
        kind = next(VOLUME_KINDS[k] for k in VOLUME_SOURCE_KEYS if k in item)
        source = item[kind.value]
        volumes.append(
            Volume(
                name=item["name"],
                kind=kind,
                mount_path=item["mountPath"],
                source=source.get(VOLUME_SOURCE_KEYS[kind.value][0], "")
                if kind is not VolumeKind.EMPTY_DIR
                else "",
                read_only=bool(item.get("readOnly")),
                medium=source.get("medium", "") if kind is VolumeKind.EMPTY_DIR else "",
                size_limit=source.get("sizeLimit", "") if kind is VolumeKind.EMPTY_DIR else "",
            )
        )
    tolerations = tuple(
        Toleration(
            key=t.get("key", ""),
            operator=t.get("operator", "Equal"),
            value=t.get("value", ""),
            effect=t.get("effect", ""),
            seconds=t.get("tolerationSeconds"),
        )
        for t in value(spec, "tolerations")
    )
    return {
        "args": tuple(value(spec, "args")),
        "env_vars": env,
        "volumes": tuple(volumes),
        "shm_size": value(spec, "shm_size"),
        "resources": Resources(
            cpu=value(spec, "cpu"),
            memory=value(spec, "memory"),
            cpu_limit=value(spec, "cpu_limit"),
            memory_limit=value(spec, "memory_limit"),
        ),
        "image_pull_secret": value(spec, "image_pull_secret"),
        "tolerations": tolerations,
        "working_dir": value(spec, "working_dir"),
        "labels": dict(value(spec, "labels")),
        "annotations": dict(value(spec, "annotations")),
        "host_network": bool(value(spec, "host_network")),
        "allow_privilege_escalation": spec.get("allow_privilege_escalation"),
    }

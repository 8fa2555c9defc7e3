"""Submit from YAML: a Kubernetes pod template turned into a job's image, command and spec.

A template is a PodTemplateSpec or a Pod (``metadata`` + ``spec``) or a bare PodSpec (an object
with ``containers``), as YAML text (the form's paste or upload, or a string in the API) or an
object (the API's ``pod_template``). What it may say, and where it goes:

- ``metadata.labels`` / ``annotations`` -> the job's labels and annotations (``name`` ignored:
  the platform names the pods);
- ``spec.containers[0]``: ``image``, ``command``, ``args``, ``env``, ``workingDir``,
  ``resources`` (cpu and memory requests and limits), ``volumeMounts`` (name, mountPath,
  readOnly), ``securityContext`` (``allowPrivilegeEscalation: false``, ``privileged: false``);
- ``spec.volumes`` (persistentVolumeClaim, configMap, secret, emptyDir; each mounted once),
  ``tolerations``, ``imagePullSecrets`` (one), ``restartPolicy: Never``, ``hostNetwork`` (in a
  service class that allows host networking).

The platform owns the rest: one container per worker (a second container, a sidecar or an init
container, is refused), the GPUs (an ``nvidia.com/...`` resource is refused: the job's
``gpus_per_worker`` and flavors say it), the placement (``nodeSelector``, ``affinity``,
``nodeName`` refused), the restart policy, its labels. ``hostPath`` volumes, ``privileged``,
``allowPrivilegeEscalation: true``, added capabilities, ``hostPID`` and ``hostIPC`` are never
allowed; every field not listed is refused as not supported, with its path
(``pod_template.spec.volumes[0].hostPath: not allowed ...``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from queues.models import job_spec
from queues.models.job_spec import Origin

MAX_TEXT = 64 * 1024
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's when PyYAML has it
PLACEMENT = "not allowed: the platform places the workers (choose flavors and a topology)"
NEVER = "not allowed"
GPU = "not allowed: the platform sets the GPUs (gpus_per_worker and flavors)"
SPEC_KEYS = ("containers", "volumes", "tolerations", "imagePullSecrets", "restartPolicy")
SPEC_REFUSED = {
    "nodeSelector": PLACEMENT,
    "affinity": PLACEMENT,
    "nodeName": PLACEMENT,
    "schedulerName": PLACEMENT,
    "initContainers": "not supported: one container per worker",
}
HOST_NAMESPACES = ("hostPID", "hostIPC")
CONTAINER_KEYS = (
    "name", "image", "command", "args", "env", "workingDir", "resources", "volumeMounts",
    "securityContext",
)  # fmt: skip
RESOURCES = {("requests", "cpu"): "cpu", ("requests", "memory"): "memory",
             ("limits", "cpu"): "cpu_limit", ("limits", "memory"): "memory_limit"}  # fmt: skip


@dataclass
class Converted:
    """A template's image and command (None: not given), its spec keys, where each came from,
    and what is wrong with it as ``(field, message)``."""

    image: str | None = None
    command: list[str] | None = None
    spec: dict[str, Any] = field(default_factory=dict)
    paths: dict[str, str] = field(default_factory=dict)
    problems: list[tuple[str, str]] = field(default_factory=list)

    def bad(self, path: str, message: str) -> None:
        self.problems.append(("pod_template", f"{path}: {message}"))


def load(raw: Any) -> tuple[Any, str]:
    """The template object of ``raw`` (YAML text or an object), or None and the problem."""
    if isinstance(raw, str):
        if len(raw) > MAX_TEXT:
            return None, f"pod_template: at most {MAX_TEXT} characters"
        if "\x00" in raw:
            return None, "pod_template: the NUL character is not allowed"
        try:
            raw = yaml.load(raw, Loader=SAFE_LOADER)
        except RecursionError:
            return None, "pod_template: nested too deeply"
        except yaml.YAMLError as error:
            where = getattr(error, "problem_mark", None)
            line = f" (line {where.line + 1})" if where is not None else ""
            problem = getattr(error, "problem", None) or "cannot be read"
            return None, f"pod_template: not valid YAML{line}: {problem}"
    if not isinstance(raw, dict) or not ("spec" in raw or "containers" in raw):
        return None, (
            "pod_template: give a pod template (an object with metadata and spec) or a pod "
            "spec (an object with containers)"
        )
    return raw, ""


def convert(template: dict[str, Any]) -> Converted:
    out = Converted()
    if "containers" in template and "spec" not in template:
        _spec(out, template, "pod_template")
        return out
    for key in template:
        if key not in ("apiVersion", "kind", "metadata", "spec"):
            out.bad(f"pod_template.{key}", "not supported")
    if template.get("kind", "Pod") not in ("Pod", "PodTemplateSpec"):
        out.bad("pod_template.kind", "a Pod or a PodTemplateSpec")
    _metadata(out, template.get("metadata") or {})
    spec = template.get("spec")
    if not isinstance(spec, dict):
        out.bad("pod_template.spec", "must be an object with containers")
        return out
    _spec(out, spec, "pod_template.spec")
    return out


def _metadata(out: Converted, metadata: Any) -> None:
    if not isinstance(metadata, dict):
        out.bad("pod_template.metadata", "must be an object")
        return
    for key, raw in metadata.items():
        if key in ("labels", "annotations"):
            out.spec[key] = raw
            out.paths[key] = f"pod_template.metadata.{key}"
        elif key == "namespace":
            out.bad("pod_template.metadata.namespace", "not allowed: jobs run in their team's")
        elif key != "name":
            out.bad(f"pod_template.metadata.{key}", "not supported")


def _spec(out: Converted, spec: dict[str, Any], at: str) -> None:
    for key, raw in spec.items():
        if key in SPEC_REFUSED:
            out.bad(f"{at}.{key}", SPEC_REFUSED[key])
        elif key in HOST_NAMESPACES:
            if raw is not False:
                out.bad(f"{at}.{key}", NEVER)
        elif key == "hostNetwork":
            out.spec["host_network"] = raw
            out.paths["host_network"] = f"{at}.hostNetwork"
        elif key == "restartPolicy":
            if raw != "Never":
                out.bad(f"{at}.restartPolicy", "only Never: the platform restarts failed jobs")
        elif key not in SPEC_KEYS:
            out.bad(f"{at}.{key}", "not supported")
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        out.bad(f"{at}.containers", "give one container")
        return
    for index in range(1, len(containers)):
        out.bad(
            f"{at}.containers[{index}]", "not supported: one container per worker (no sidecars)"
        )
    if not isinstance(containers[0], dict):
        out.bad(f"{at}.containers[0]", "must be an object")
        return
    mounts = _container(out, containers[0], f"{at}.containers[0]")
    _volumes(out, spec.get("volumes") or [], mounts, at, f"{at}.containers[0]")
    if "tolerations" in spec:
        out.spec["tolerations"] = spec["tolerations"]
        out.paths["tolerations"] = f"{at}.tolerations"
        if isinstance(spec["tolerations"], list):
            for i in range(len(spec["tolerations"])):
                out.paths[f"tolerations[{i}]"] = f"{at}.tolerations[{i}]"
    _pull_secret(out, spec.get("imagePullSecrets"), f"{at}.imagePullSecrets")


def _container(out: Converted, container: dict[str, Any], at: str) -> list[Any]:
    for key in container:
        if key not in CONTAINER_KEYS:
            out.bad(f"{at}.{key}", "not supported")
    image = container.get("image")
    if image is not None:
        if isinstance(image, str):
            out.image = image
        else:
            out.bad(f"{at}.image", "must be text")
    command = container.get("command")
    if command is not None:
        if isinstance(command, list) and all(isinstance(w, str) for w in command):
            out.command = command
        else:
            out.bad(f"{at}.command", "must be a list of strings")
    for key, name in (("args", "args"), ("workingDir", "working_dir"), ("env", "env")):
        if key in container:
            out.spec[name] = container[key]
            out.paths[name] = f"{at}.{key}"
    if isinstance(container.get("env"), list):
        for i in range(len(container["env"])):
            out.paths[f"env[{i}]"] = f"{at}.env[{i}]"
    _resources(out, container.get("resources"), f"{at}.resources")
    _security(out, container.get("securityContext"), f"{at}.securityContext")
    mounts = container.get("volumeMounts") or []
    if not isinstance(mounts, list):
        out.bad(f"{at}.volumeMounts", "must be a list")
        return []
    return mounts


def _resources(out: Converted, resources: Any, at: str) -> None:
    if resources is None:
        return
    if not isinstance(resources, dict):
        out.bad(at, "must be an object with requests and limits")
        return
    for part, amounts in resources.items():
        if part not in ("requests", "limits"):
            out.bad(f"{at}.{part}", "not supported")
            continue
        if not isinstance(amounts, dict):
            out.bad(f"{at}.{part}", "must be an object, e.g. {cpu: 8, memory: 64Gi}")
            continue
        for resource, amount in amounts.items():
            name = RESOURCES.get((part, resource))
            if name is not None:
                out.spec[name] = amount
                out.paths[name] = f"{at}.{part}.{resource}"
            elif "/" in str(resource):
                out.bad(f"{at}.{part}.{resource}", GPU)
            else:
                out.bad(f"{at}.{part}.{resource}", "not supported (cpu and memory only)")


def _security(out: Converted, context: Any, at: str) -> None:
    if context is None:
        return
    if not isinstance(context, dict):
        out.bad(at, "must be an object")
        return
    for key, raw in context.items():
        if key == "privileged":
            if raw is not False:
                out.bad(f"{at}.privileged", NEVER)
        elif key == "allowPrivilegeEscalation":
            if raw is False:
                out.spec["allow_privilege_escalation"] = False
            else:
                out.bad(f"{at}.allowPrivilegeEscalation", f"{NEVER} (only false)")
        elif key == "capabilities" and isinstance(raw, dict) and raw.get("add"):
            out.bad(f"{at}.capabilities.add", NEVER)
        else:
            out.bad(f"{at}.{key}", "not supported")


def _volumes(out: Converted, volumes: Any, mounts: list[Any], at: str, container: str) -> None:
    """Each volume joined with its one mount: a spec volume."""
    if not isinstance(volumes, list):
        out.bad(f"{at}.volumes", "must be a list")
        return
    by_name: dict[str, int] = {}
    for index, volume in enumerate(volumes):
        if isinstance(volume, dict) and isinstance(volume.get("name"), str):
            by_name.setdefault(volume["name"], index)
    mounted: dict[int, int] = {}
    for m, mount in enumerate(mounts):
        where = f"{container}.volumeMounts[{m}]"
        if not isinstance(mount, dict):
            out.bad(where, "must be an object with name and mountPath")
            continue
        for key in mount:
            if key not in ("name", "mountPath", "readOnly"):
                out.bad(f"{where}.{key}", "not supported")
        name = mount.get("name")
        index = by_name.get(name) if isinstance(name, str) else None
        if index is None:
            out.bad(f"{where}.name", f"no volume named {mount.get('name')!r} in {at}.volumes")
        elif index in mounted:
            out.bad(where, f"{mount['name']} is mounted twice; mount each volume once")
        else:
            mounted[index] = m
    joined: list[dict[str, Any]] = []
    for index, volume in enumerate(volumes):
        where = f"{at}.volumes[{index}]"
        if not isinstance(volume, dict):
            out.bad(where, "must be an object with a name and one source")
            continue
        if index not in mounted:
            refused = [k for k in job_spec.FORBIDDEN_VOLUMES if k in volume]
            out.bad(
                f"{where}.{refused[0]}" if refused else where,
                "not allowed" if refused else "not mounted by the container: remove it",
            )
            continue
        mount = mounts[mounted[index]]
        item = {k: v for k, v in volume.items()}
        item["mountPath"] = mount.get("mountPath")
        if "readOnly" in mount:
            item["readOnly"] = mount["readOnly"]
        out.paths[f"volumes[{len(joined)}]"] = where
        out.paths[f"volumes[{len(joined)}]@mount"] = f"{container}.volumeMounts[{mounted[index]}]"
        joined.append(item)
    if joined or volumes:
        out.spec["volumes"] = joined
        out.paths["volumes"] = f"{at}.volumes"


def _pull_secret(out: Converted, secrets: Any, at: str) -> None:
    if secrets is None:
        return
    if not isinstance(secrets, list) or not all(isinstance(s, dict) for s in secrets):
        out.bad(at, "must be a list of {name: SECRET}")
        return
    for index in range(1, len(secrets)):
        out.bad(f"{at}[{index}]", "not supported: one image pull secret")
    if secrets:
        for key in secrets[0]:
            if key != "name":
                out.bad(f"{at}[0].{key}", "not supported")
        out.spec["image_pull_secret"] = secrets[0].get("name")
        out.paths["image_pull_secret"] = f"{at}[0].name"


@dataclass
class Resolved:
    """A submission's image, command and spec, with its template folded in and checked."""

    image: str | None
    command: Any
    spec: dict[str, Any]
    problems: list[tuple[str, str]]


def resolve(
    image: str | None,
    command: Any,
    spec: Mapping[str, Any] | None,
    template: Any,
    service_class: Any = None,
) -> Resolved:
    """Fold ``template`` (if any) into the submission's ``image``, ``command`` and ``spec``
    (a field given both ways is refused) and check the spec (job_spec.clean)."""
    raw = dict(spec or {})
    origin = Origin()
    problems: list[tuple[str, str]] = []
    if template is not None and template != "":
        loaded, problem = load(template)
        if loaded is None:  # the image and command may be in it: their rules wait
            return Resolved(None, None, {}, [("pod_template", problem)])
        converted = convert(loaded)
        problems += converted.problems
        given = {"image": (image, converted.image), "command": (command, converted.command)}
        for name, (mine, theirs) in given.items():
            if mine and theirs:
                problems.append(
                    ("pod_template", f"pod_template: the {name} is given twice (also as {name})")
                )
        image = image or converted.image or ""
        command = command or converted.command or []
        for name, theirs in converted.spec.items():
            if raw.get(name) not in (None, "", [], {}, False):
                problems.append(
                    (
                        "pod_template",
                        f"{converted.paths.get(name, 'pod_template')}: {name} is "
                        f"given twice (also as {name})",
                    )
                )
            raw[name] = theirs
        origin = Origin(converted.paths)
    cleaned = job_spec.clean(raw, service_class, origin)
    return Resolved(image, command, cleaned.spec, problems + cleaned.problems)

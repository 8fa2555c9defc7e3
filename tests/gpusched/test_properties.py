"""Property tests: on random small scenarios, every policy's report keeps every rule.

Each example is simulated with each policy and the report replayed by the independent checker
(``gpusched.check.checker``); a run must also be deterministic. Hypothesis is derandomized
(the same examples on every run, CI included); set ``HYPOTHESIS_PROFILE=thorough`` to explore
more. A failure prints the shrunk scenario as YAML, ready to save and replay with
``python manage.py simulate``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings

from gpusched.check.checker import check_report
from gpusched.engine.policies import POLICIES
from gpusched.sim.scenario import load_scenario, parse_scenario
from gpusched.sim.simulate import simulate
from tests.gpusched.strategies import contended_tree_scenarios, scenarios, tree_scenarios

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"

settings.register_profile(
    "ci",
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.register_profile(
    "thorough",
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
# the simulations below are the slow part: fewer examples in CI, the profile's count otherwise
THOROUGH = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"


def _as_yaml(data: dict[str, Any]) -> str:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=120)


@given(data=scenarios())
def test_random_scenarios_load_the_same_from_yaml(
    data: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = tmp_path_factory.mktemp("scenario") / "random.yaml"
    path.write_text(_as_yaml(data))
    from_file = load_scenario(path)
    assert from_file == parse_scenario(data, source=str(path))


@settings(max_examples=500 if THOROUGH else 25)
@given(data=scenarios())
def test_every_policy_keeps_every_rule_on_random_scenarios(data: dict[str, Any]) -> None:
    scenario = parse_scenario(data, source="random.yaml")
    for policy in sorted(POLICIES):
        report = simulate(scenario, policy=policy)
        violations = check_report(scenario, report)
        assert not violations, (
            f"policy {policy!r} broke {len(violations)} rule(s):\n  "
            + "\n  ".join(violations[:20])
            + f"\nscenario:\n{_as_yaml(data)}"
        )


@settings(max_examples=200 if THOROUGH else 10)
@given(data=scenarios())
def test_the_same_scenario_always_gives_the_same_decisions(data: dict[str, Any]) -> None:
    scenario = parse_scenario(data, source="random.yaml")
    for policy in sorted(POLICIES):
        first = simulate(scenario, policy=policy)
        second = simulate(scenario, policy=policy)
        assert first["events"] == second["events"], f"policy {policy!r}:\n{_as_yaml(data)}"
        assert first["jobs"] == second["jobs"]


def _keeps_every_rule_on_a_tree(data: dict[str, Any]) -> None:
    scenario = parse_scenario(data, source=f"{data['name']}.yaml")
    for policy in sorted(POLICIES):
        first = simulate(scenario, policy=policy)
        violations = check_report(scenario, first)
        assert not violations, (
            f"policy {policy!r} broke {len(violations)} rule(s):\n  "
            + "\n  ".join(violations[:20])
            + f"\nscenario:\n{_as_yaml(data)}"
        )
        assert simulate(scenario, policy=policy)["events"] == first["events"]


@settings(max_examples=300 if THOROUGH else 20)
@given(data=tree_scenarios())
def test_every_policy_keeps_every_rule_on_random_cohort_trees(data: dict[str, Any]) -> None:
    """Three levels of cohorts with random quotas on every feature of the random scenarios: no
    pool at any level is ever exceeded, and every other rule the checker knows holds."""
    _keeps_every_rule_on_a_tree(data)


@settings(max_examples=300 if THOROUGH else 25)
@given(data=contended_tree_scenarios())
def test_every_policy_keeps_every_rule_on_contended_cohort_trees(data: dict[str, Any]) -> None:
    """Four teams in three levels fighting over one flavor: reclaim and fair sharing happen
    inside departments and between them (hundreds of times over the thorough profile), and
    every rule holds, with no two jobs preempting each other for ever (work conservation and
    the preemptors' promises would fail)."""
    _keeps_every_rule_on_a_tree(data)


@settings(max_examples=100 if THOROUGH else 10)
@given(data=scenarios())
def test_declaring_the_flat_cohorts_changes_no_decision(data: dict[str, Any]) -> None:
    """A cohort a queue names means the same whether ``cohorts`` declares it (as a root
    without quota) or not."""
    declared = dict(data)
    named = sorted({q["cohort"] for q in data["queues"] if "cohort" in q})
    declared["cohorts"] = [{"name": name} for name in named]
    flat = parse_scenario(data, source="flat.yaml")
    tree = parse_scenario(declared, source="declared.yaml")
    assert simulate(flat)["events"] == simulate(tree)["events"]


# Hand-shrunk scenarios, each of which once broke a rule (found by the tests above). They run on
# every test run, whatever examples Hypothesis draws.
_GPU = [{"name": "gpu", "resource": "nvidia.com/gpu"}]
_TWO_NODES = [{"name": "c", "nodes": [{"name": "n0", "gpus": {"gpu": 8}},
                                      {"name": "n1", "gpus": {"gpu": 8}}]}]  # fmt: skip
_CLASSES = [
    {"name": "std", "priority": 100, "grace_period": 20},
    {"name": "low", "priority": 10, "grace_period": 15, "max_runtime": 100},
]


def _case(jobs: list[dict[str, Any]], nominal: int = 16, **extra: Any) -> dict[str, Any]:
    full = [{"queue": "a", "class": "std", "submit_at": 0, "workers": 1, "gpus_per_worker": 8,
             "flavor": "gpu", "duration": None, **job} for job in jobs]  # fmt: skip
    return {"name": "case", "cycle_interval": 10, "until": 2000, "flavors": _GPU,
            "clusters": _TWO_NODES, "service_classes": _CLASSES,
            "queues": [{"name": "a", "quotas": {"gpu": {"nominal": nominal}}}],
            "jobs": full, **extra}  # fmt: skip


KNOWN_CASES = {
    # a job cancelled before it is submitted must never run
    "cancel-before-submit": _case(
        [{"name": "j", "submit_at": 100, "duration": 50}],
        events=[{"at": 1, "job": "j", "action": "cancel"}],
    ),
    # a cancelled job holds its GPUs for its class grace period
    "cancel-holds-grace": _case(
        [{"name": "a"}, {"name": "c"}, {"name": "b", "submit_at": 10}],
        events=[{"at": 50, "job": "a", "action": "cancel"}],
    ),
    # a job stopped at max_runtime holds its GPUs for its grace period; the next one is limited too
    "max-runtime-holds-grace": _case(
        [
            {"name": "a", "class": "low"},
            {"name": "c"},
            {"name": "b", "class": "low", "submit_at": 10, "duration": 1000},
        ]
    ),
    # a gang stopped by a node failure holds its healthy node for its grace period
    "node-failure-holds-grace": _case(
        [{"name": "a", "workers": 2}, {"name": "b", "class": "low", "submit_at": 10}],
        events=[{"at": 50, "node": "n0", "action": "fail"}],
    ),
    # a stopping victim still counts against its queue's quota until its grace period ends
    "stopping-job-keeps-its-quota": _case(
        [
            {"name": "low1", "class": "low", "gpus_per_worker": 4, "duration": 50000},
            {"name": "low2", "class": "low", "gpus_per_worker": 3, "submit_at": 50},
            {"name": "hi", "gpus_per_worker": 1, "submit_at": 100},
        ],
        nominal=4,
        service_classes=[
            {"name": "std", "priority": 100},
            {"name": "low", "priority": 10, "grace_period": 15},
        ],
    ),
    # a class that cannot borrow is admitted only if its queue stays within nominal, also when
    # an elastic job of the same queue is shrunk for it (here: shrunk too little, then regrown)
    "elastic-shrink-leaves-prod-borrowing": _case(
        [
            {"name": "f", "queue": "b", "class": "prod", "gpus_per_worker": 3},
            {"name": "s", "workers": 3, "gpus_per_worker": 1, "min_workers": 1, "submit_at": 1},
            {"name": "p", "class": "prod", "workers": 4, "gpus_per_worker": 2, "submit_at": 10},
        ],
        clusters=[
            {
                "name": "c",
                "nodes": [{"name": "n0", "gpus": {"gpu": 7}}, {"name": "n1", "gpus": {"gpu": 7}}],
            }
        ],
        queues=[
            {"name": "a", "cohort": "x", "quotas": {"gpu": {"nominal": 9}}},
            {"name": "b", "cohort": "x", "quotas": {"gpu": {"nominal": 5}}},
        ],
        service_classes=[
            {"name": "prod", "priority": 1000, "preemptible": False, "can_borrow": False},
            {"name": "std", "priority": 100},
        ],
    ),
    # a preemptor waiting for its victims' grace period does not start on a node cordoned
    # meanwhile (a node that fails meanwhile is handled the same way)
    "node-cordoned-during-grace": _case(
        [
            {"name": "v", "queue": "b", "class": "low", "gpus_per_worker": 4},
            {"name": "p", "gpus_per_worker": 4, "submit_at": 10},
        ],
        clusters=[{"name": "c", "nodes": [{"name": "n0", "gpus": {"gpu": 4}}]}],
        queues=[
            {"name": "a", "cohort": "x", "quotas": {"gpu": {"nominal": 4}}},
            {"name": "b", "cohort": "x", "quotas": {}},
        ],
        events=[{"at": 20, "node": "n0", "action": "cordon"}],
    ),
    # quota freed for a preemptor that waits for a grace period is held for it: a victim
    # released sooner (grace 0) must not take it back meanwhile
    "preemptor-quota-held-during-grace": _case(
        [
            {"name": "s1", "gpus_per_worker": 4},
            {"name": "sp", "class": "spot", "gpus_per_worker": 4},
            {"name": "p", "class": "prod", "gpus_per_worker": 1, "submit_at": 10},
        ],
        clusters=[{"name": "c", "nodes": [{"name": "n0", "gpus": {"gpu": 16}}]}],
        queues=[
            {"name": "a", "cohort": "x", "quotas": {"gpu": {"nominal": 4}}},
            {"name": "b", "cohort": "x", "quotas": {"gpu": {"nominal": 8}}},
        ],
        service_classes=[
            {"name": "prod", "priority": 1000, "preemptible": False, "can_borrow": False},
            {"name": "std", "priority": 100, "grace_period": 30},
            {"name": "spot", "priority": 10},
        ],
    ),
}


@pytest.mark.parametrize("name", sorted(KNOWN_CASES))
def test_every_policy_keeps_every_rule_on_known_cases(name: str) -> None:
    data = KNOWN_CASES[name]
    scenario = parse_scenario(data, source=f"{name}.yaml")
    for policy in sorted(POLICIES):
        violations = check_report(scenario, simulate(scenario, policy=policy))
        assert not violations, f"policy {policy!r}:\n  " + "\n  ".join(violations)


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_policy_keeps_every_rule_on_the_example_scenarios(path: Path) -> None:
    scenario = load_scenario(path)
    for policy in sorted(POLICIES):
        violations = check_report(scenario, simulate(scenario, policy=policy))
        assert not violations, f"policy {policy!r}:\n  " + "\n  ".join(violations)

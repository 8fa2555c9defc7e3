"""The benchmark scenario generator makes valid, realistic and reproducible scenarios."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from benchmarks.generate import generate, main
from gpusched.sim.scenario import load_scenario, parse_scenario
from gpusched.sim.simulate import simulate


def _small(seed: int) -> dict[str, Any]:
    return generate(seed=seed, nodes=40, queues=6, cohorts=2, jobs=300, mig_fraction=0.25)


def test_a_small_generated_scenario_parses() -> None:
    scenario = parse_scenario(_small(1), source="generated")
    assert len(scenario.jobs) == 300
    assert sum(len(c.nodes) for c in scenario.clusters) == 40
    assert len(scenario.queues) == 6
    assert {c.name for c in scenario.service_classes} == {"prod", "std", "spot"}
    assert {q.cohort for q in scenario.queues} == {"cohort-0", "cohort-1"}


def test_the_same_seed_gives_the_same_scenario_and_another_seed_does_not() -> None:
    assert _small(7) == _small(7)
    assert _small(7)["jobs"] != _small(8)["jobs"]


def test_queue_nominal_quotas_add_up_to_cluster_capacity() -> None:
    scenario = parse_scenario(_small(2))
    capacity: Counter[str] = Counter()
    for cluster in scenario.clusters:
        for node in cluster.nodes:
            capacity.update(node.gpus)
    nominal: Counter[str] = Counter()
    for queue in scenario.queues:
        nominal.update({f: q.nominal for f, q in queue.quotas.items()})
    assert nominal == capacity


def test_mig_nodes_expose_whole_h100s_worth_of_slices_and_nothing_else() -> None:
    scenario = parse_scenario(_small(3))
    mig_nodes = [
        n for c in scenario.clusters for n in c.nodes if any(f.startswith("h100-") for f in n.gpus)
    ]
    assert len(mig_nodes) == 10
    for node in mig_nodes:
        assert node.gpus in ({"h100-1g.10gb": 56}, {"h100-3g.40gb": 16, "h100-1g.10gb": 8})


def test_job_mix_is_mostly_small_with_a_tail_of_large_gangs() -> None:
    scenario = parse_scenario(generate(seed=4, nodes=200, queues=10, cohorts=3, jobs=3000))
    sizes = Counter(j.workers * j.gpus_per_worker for j in scenario.jobs)
    assert sizes[1] > 0.4 * len(scenario.jobs)
    assert sum(n for size, n in sizes.items() if size >= 16) > 0.05 * len(scenario.jobs)
    assert all(j.gpus_per_worker <= 8 for j in scenario.jobs)
    assert any(j.min_workers is not None for j in scenario.jobs)
    assert any(j.topology is not None for j in scenario.jobs)
    assert any(len(j.flavors) == 2 for j in scenario.jobs)
    submits = [j.submit_at for j in scenario.jobs]
    assert submits == sorted(submits)
    assert {e.action for e in scenario.events} >= {"fail", "recover", "cancel"}


def test_bad_generator_arguments_are_rejected() -> None:
    with pytest.raises(ValueError, match="mig_fraction"):
        generate(mig_fraction=1.5)
    with pytest.raises(ValueError, match="nodes"):
        generate(nodes=0)


def test_command_line_writes_a_loadable_yaml_file(tmp_path: Path) -> None:
    output = tmp_path / "gen.yaml"
    assert main(["--nodes", "16", "--queues", "3", "--cohorts", "1", "--jobs", "50",
                 "--output", str(output)]) == 0  # fmt: skip
    scenario = load_scenario(output)
    assert len(scenario.jobs) == 50
    assert yaml.safe_load(output.read_text())["name"] == scenario.name


@pytest.mark.parametrize(
    ("seed", "jobs", "nodes", "queues", "cohorts"),
    [(0, 2000, 100, 20, 4), (5, 1000, 50, 40, 8)],
)
def test_generated_scenarios_run_to_their_end(
    seed: int, jobs: int, nodes: int, queues: int, cohorts: int
) -> None:
    """No two jobs trade places for ever: a month after the last submission nothing still runs.
    These two scenarios each exposed a preemption livelock (an elastic job growing back after a
    fair-share preemption; a priority swap taking back what a fair-share preemption took)."""
    data = generate(seed=seed, nodes=nodes, queues=queues, cohorts=cohorts, jobs=jobs)
    data["until"] = max(j["submit_at"] for j in data["jobs"]) + 30 * 86400
    report = simulate(parse_scenario(data, source=f"generated-{seed}"))
    held = [j["name"] for j in report["jobs"] if j["state"] in ("running", "stopping")]
    assert held == [], f"still holding GPUs a month after the last submission: {held}"

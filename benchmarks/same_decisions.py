"""Check that an engine change leaves every decision as it was (a tool, not a timed test).

    .venv/bin/python benchmarks/same_decisions.py write /tmp/before    # on the old engine
    .venv/bin/python benchmarks/same_decisions.py compare /tmp/before  # on the new one

Replays the example scenarios (``../shared/scenarios``) under every policy and six generated
scenarios under ``default`` and ``greedy``, and writes or compares each report with its timing
fields (``engine_seconds``, ``cycle_ms``) removed. Exits 1 when a report differs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from generate import generate

from gpusched.sim.scenario import Scenario, load_scenario, parse_scenario
from gpusched.sim.simulate import simulate

EXAMPLES = Path(__file__).resolve().parents[2] / "shared" / "scenarios"
# seed, jobs, nodes, queues, cohorts
GENERATED = [
    (0, 2000, 100, 20, 4),
    (1, 2000, 100, 20, 4),
    (2, 3000, 150, 30, 3),
    (3, 4000, 200, 20, 2),
    (4, 2000, 200, 10, 5),
    (5, 1000, 50, 40, 8),
]


def without_timing(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {
            k: without_timing(v) for k, v in obj.items() if k not in ("engine_seconds", "cycle_ms")
        }
    if isinstance(obj, list):
        return [without_timing(v) for v in obj]
    return obj


def cases() -> Iterator[tuple[str, Callable[[], Scenario], str]]:
    for path in sorted(EXAMPLES.glob("*.yaml")):
        for policy in ("default", "fifo", "greedy"):
            yield f"{path.stem}-{policy}", (lambda p=path: load_scenario(p)), policy
    for seed, jobs, nodes, queues, cohorts in GENERATED:
        data = generate(seed=seed, nodes=nodes, queues=queues, cohorts=cohorts, jobs=jobs)
        for policy in ("default", "greedy"):
            yield f"generated{seed}-{policy}", (lambda d=data: parse_scenario(d, "gen")), policy


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["write", "compare"])
    parser.add_argument("folder", type=Path)
    args = parser.parse_args(argv)
    args.folder.mkdir(parents=True, exist_ok=True)
    different = 0
    for name, load, policy in cases():
        began = time.perf_counter()
        text = json.dumps(without_timing(simulate(load(), policy)), sort_keys=True)
        seconds = time.perf_counter() - began
        path = args.folder / f"{name}.json"
        if args.mode == "write":
            path.write_text(text)
            print(f"{name}: written ({seconds:.1f} s)", flush=True)
        else:
            same = path.exists() and path.read_text() == text
            different += not same
            print(f"{name}: {'same' if same else 'DIFFERENT'} ({seconds:.1f} s)", flush=True)
    if args.mode == "compare":
        print(f"reports that differ: {different}")
    return 1 if different else 0


if __name__ == "__main__":
    raise SystemExit(main())

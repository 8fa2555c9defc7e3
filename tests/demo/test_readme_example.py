"""The README's API examples use the demo's names (issue 24: the submit example named flavor
``a100``, the demo's is ``a100-80gb``, and the API refused it with 400)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from queues.management.commands.seed_demo import FLAVORS

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_job_examples_name_only_the_demos_flavors() -> None:
    bodies = re.findall(r"-d '(\{[^']*\"flavors\"[^']*\})'", README.read_text())
    assert bodies, "the README has a job submission example"
    demo = {flavor["name"] for flavor in FLAVORS}
    for body in bodies:
        flavors = json.loads(body)["flavors"]
        assert set(flavors) <= demo, f"{flavors} are not all demo flavors ({sorted(demo)})"

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


def test_readme_job_spec_and_template_examples_pass_the_submission_rules() -> None:
    """The DDP example's spec (env, volumes, shm...) and the pod template example are ones
    the platform accepts (queues/models/job_spec.py, pod_template.py)."""
    from queues.models import job_spec, pod_template

    bodies = [
        json.loads(b) for b in re.findall(r"-d '(\{[^']*\"flavors\"[^']*\})'", README.read_text())
    ]
    with_spec = [b for b in bodies if "env" in b or "pod_template" in b]
    assert len(with_spec) == 2
    for body in with_spec:
        spec = {k: v for k, v in body.items() if k in job_spec.SPEC_FIELDS}
        resolved = pod_template.resolve(
            body.get("image", ""), body.get("command", []), spec, body.get("pod_template")
        )
        assert resolved.problems == []
        assert resolved.image == "pytorch/pytorch:2.4.0"

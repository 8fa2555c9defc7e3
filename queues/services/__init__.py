"""The only writer of scheduling state (docs/ARCHITECTURE.md). Views, the REST API, Celery tasks
and management commands call these functions:

- ``run_cycle(now=None)``: one live scheduling cycle (single-flight), returns a ``CycleReport``;
- ``build_snapshot(now)``: the engine's snapshot from the database;
- ``submit_job(...)``, ``submit_array(owner=, submissions=)``, ``cancel_job(job, by_user)``:
  what users do to jobs;
- ``fail_nodes(nodes)``, ``recover_nodes(nodes)``: failure injection on simulated clusters.
"""

from queues.services.arrays import submit_array
from queues.services.cycle import run_cycle
from queues.services.jobs import cancel_job, queue_cycle, submit_job
from queues.services.nodes import fail_nodes, recover_nodes
from queues.services.report import CycleReport
from queues.services.snapshot import LiveSnapshot, build_snapshot

__all__ = [
    "CycleReport",
    "LiveSnapshot",
    "build_snapshot",
    "cancel_job",
    "fail_nodes",
    "queue_cycle",
    "recover_nodes",
    "run_cycle",
    "submit_array",
    "submit_job",
]

"""Operator actions on nodes: cordon, drain, uncordon, fail and recover.

- ``cordon``: the platform places no new work on the node; its jobs keep running.
- ``drain`` (kubectl drain's meaning for the platform's own jobs): cordoned, and the next cycle
  stops every job with a worker there through its grace period and requeues it with its submit
  time (reason ``node-drain``, docs/SCHEDULING.md section 4).
- ``uncordon``: ends a cordon or a drain.
- ``fail`` / ``recover``: failure injection (a simulated cluster's nodes are rows here; a
  Kubernetes cluster's next sync reports the node's real readiness again).

Cordon and drain are the platform's own (``Node.cordoned``, ``Node.draining``): a Kubernetes
cluster's sync rewrites ``schedulable`` and ``ready`` from the API, never these two, and the
platform needs no write access to nodes. Each change is audited by the caller.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from queues.models import Node


@dataclass(frozen=True)
class NodeAction:
    values: dict[str, bool]  # the fields it sets
    said: str  # what happened, for the admin's message
    cycle: bool  # whether the next cycle should run now (it stops or frees work)


NODE_ACTIONS = {
    "cordon": NodeAction(
        {"cordoned": True}, "cordoned: it takes no new work, its jobs keep running", False
    ),
    "drain": NodeAction(
        {"cordoned": True, "draining": True},
        "drained: it takes no new work, and its jobs are stopped through their grace period "
        "and requeued",
        True,
    ),
    "uncordon": NodeAction(
        {"cordoned": False, "draining": False}, "uncordoned: it takes new work again", True
    ),
    "fail": NodeAction(
        {"ready": False}, "marked failed: the next cycle requeues the jobs on it", True
    ),
    "recover": NodeAction({"ready": True}, "recovered: its GPUs return to the next cycle", True),
}


def apply_node_action(node: Node, action: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Set the fields of ``action`` on ``node``; return (before, after) of the fields that
    changed, for the audit trail (both empty when nothing changed)."""
    from queues.services.jobs import queue_cycle

    wanted = NODE_ACTIONS[action]
    before = {f: getattr(node, f) for f, v in wanted.values.items() if getattr(node, f) != v}
    after = {f: wanted.values[f] for f in before}
    if after:
        Node.objects.filter(pk=node.pk).update(**after)
        for field, value in after.items():
            setattr(node, field, value)
        if wanted.cycle:
            queue_cycle()
    return before, after


def fail_nodes(nodes: Iterable[Node]) -> int:
    """Mark nodes NotReady: the next cycle stops and requeues every job with a worker there."""
    from queues.services.jobs import queue_cycle

    changed = Node.objects.filter(pk__in=[n.pk for n in nodes], ready=True).update(ready=False)
    if changed:
        queue_cycle()
    return changed


def recover_nodes(nodes: Iterable[Node]) -> int:
    """Mark nodes Ready again: their capacity returns to the next cycle."""
    from queues.services.jobs import queue_cycle

    changed = Node.objects.filter(pk__in=[n.pk for n in nodes], ready=False).update(ready=True)
    if changed:
        queue_cycle()
    return changed

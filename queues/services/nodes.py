"""Operator actions on nodes of a simulated cluster: inject a failure, recover."""

from __future__ import annotations

from collections.abc import Iterable

from queues.models import Node


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

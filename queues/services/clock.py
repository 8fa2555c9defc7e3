"""One clock for everything a person reads: the wall clock.

A job's runtimes (its ``estimated_runtime``, ``DEFAULT_JOB_RUNTIME``) and a class's durations
(``max_runtime``, ``min_runtime``, ``grace_period``) are in the job's own seconds: how long it
would run, stay protected or checkpoint on real GPUs. A simulated cluster runs its
jobs ``SIMULATION_SPEED`` times faster (queues/clusters/simulated.py), so there a job of
``estimated_runtime`` 4 h is over in 4 wall-clock minutes at 60x, and is charged for 4 minutes.
The engine plans on the wall clock (the cycle's ``now``), so the live snapshot converts the
runtimes of jobs on simulated clusters into wall seconds (``wall_seconds``); estimated starts,
runtime labels and charges then agree. A pending job's runtime, and the classes' durations,
are converted when every cluster is simulated (``pending_scale``, ``class_scale``): where a job
will run is not known yet, and a platform with one real cluster plans in real time. So at 60x
a class's 300 s grace period holds a stopped job's GPUs 5 wall seconds, as its 4 h runtime
takes 4 wall minutes; the stop messages and release times say 5 s.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings

from queues.models import Cluster


def speed() -> float:
    return float(settings.SIMULATION_SPEED)


def cluster_scale(driver: str) -> float:
    """Wall seconds per job second on a cluster with this driver."""
    return 1.0 / speed() if driver == Cluster.Driver.SIMULATED else 1.0


def pending_scale(drivers: Iterable[str]) -> float:
    """Wall seconds per job second of a job not placed yet: the simulated one when every
    cluster is simulated (the demo), else 1."""
    kinds = set(drivers)
    return cluster_scale(Cluster.Driver.SIMULATED) if kinds == {Cluster.Driver.SIMULATED} else 1.0


def class_scale() -> float:
    """Wall seconds per job second of a class's durations (grace period, min/max runtime): the
    live snapshot's ``pending_scale`` over every cluster."""
    return pending_scale(Cluster.objects.values_list("driver", flat=True))


def wall_seconds(seconds: float | None, scale: float) -> float | None:
    return None if seconds is None else float(seconds) * scale


def runtime_note(seconds: int | None, cluster: Cluster | None) -> str:
    """What ``seconds`` of a job's runtime take on the wall clock, when that differs: "about
    4 min of wall-clock time: cluster sim is simulated, 60x faster" (empty on real clusters)."""
    from queues.templatetags.ui import duration

    if seconds is None:
        return ""
    if cluster is not None:
        drivers = [cluster.driver]
        where = f"cluster {cluster.name} is simulated"
    else:
        drivers = list(Cluster.objects.values_list("driver", flat=True))
        where = "the clusters are simulated"
    scale = cluster_scale(drivers[0]) if cluster is not None else pending_scale(drivers)
    if scale == 1.0:
        return ""
    return f"about {duration(seconds * scale)} of wall-clock time: {where}, {speed():g}x faster"

"""The scheduling engine: pure Python, no Django, no clock, no I/O (docs/SCHEDULING.md).

Public API for the live platform:

- ``gpusched.engine.model``: the snapshot (``Snapshot``, ``Flavor``, ``Cluster``, ``Node``,
  ``ServiceClass``, ``Queue``, ``Quota``, ``PendingJob``, ``AdmittedJob``, ``Topology``) and the
  decisions (``CycleResult`` with ``Admit``, ``Stop``, ``Scale``, ``Reserve`` and a
  ``PendingInfo`` per pending job, whose ``message`` is the sentence to show researchers).
- ``gpusched.engine.cycle.run_cycle(snapshot, policy="default")``: one cycle.
- ``gpusched.engine.estimate.estimate(snapshot, job)``: what would happen to a job now: its
  ``Admit``, the ``Stop`` / ``Scale`` decisions made for it, or its ``PendingInfo`` (the live
  submit form and REST API show this and run no cycle of their own).
- ``gpusched.engine.fairshare``: ``decay_usage`` (update H each cycle), ``score``,
  ``slurm_factor`` / ``slurm_factors`` for dashboards.
- ``gpusched.engine.policies.get_policy(name)``: ``default``, ``fifo``, ``greedy``.
- ``gpusched.sim.simulate.simulate(scenario, policy)``: the simulator's JSON report.

The engine keeps two caches between calls (node layout and per-job accounting, keyed on the
identity of the snapshot's objects); they change no result, only how much is recomputed.
"""

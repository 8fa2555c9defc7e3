"""The scheduling engine: pure Python, no Django, no clock, no I/O (docs/SCHEDULING.md).

Public API for the live platform:

- ``gpusched.engine.model``: the snapshot (``Snapshot``, ``Flavor``, ``Cluster``, ``Node``,
  ``ServiceClass``, ``Queue``, ``Quota``, ``PendingJob``, ``AdmittedJob``, ``Topology``) and the
  decisions (``CycleResult`` with ``Admit``, ``Stop``, ``Scale``, ``Reserve`` and a
  ``PendingInfo`` per pending job, whose ``message`` is the sentence to show researchers).
- ``gpusched.engine.cycle.run_cycle(snapshot, policy="default", state=None)``: one cycle.
- ``gpusched.engine.estimate.estimate(snapshot, job, state=None)``: what would happen to a job
  now: its ``Admit``, the ``Stop`` / ``Scale`` decisions made for it, or its ``PendingInfo`` (the
  live submit form and REST API show this and run no cycle of their own).
- ``gpusched.engine.fairshare``: ``decay_usage`` (update H each cycle), ``score``,
  ``slurm_factor`` / ``slurm_factors`` for dashboards.
- ``gpusched.engine.policies.get_policy(name)``: ``default``, ``fifo``, ``greedy``.
- ``gpusched.sim.simulate.simulate(scenario, policy)``: the simulator's JSON report.
- ``gpusched.engine.state.EngineState``: what the engine keeps from one cycle to the next (node
  layout, quota statics, the admitted jobs' bookkeeping, the ranker), held by the caller and
  passed as ``state=``: the simulator holds one per run, the live cycle and estimate use a fresh
  one per call (their snapshot objects are new each time). Without one, a call starts from a
  fresh state of its own. It changes no decision, only how much is recomputed; no engine module
  keeps state of its own (tests/gpusched/test_no_module_state.py).
"""

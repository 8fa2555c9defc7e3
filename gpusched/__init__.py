"""The pure scheduler of gpuplatform: a library beside the Django apps, stdlib and PyYAML only.

- ``gpusched.engine``: one scheduling cycle (snapshot in, decisions out) and the estimate of what
  would happen to one job (docs/SCHEDULING.md).
- ``gpusched.sim``: the simulator, the scenario format and its report (docs/SCENARIOS.md), and
  the importers of public GPU-cluster traces (``gpusched.sim.traces``).
- ``gpusched.check``: the independent checker that replays a report and holds it to the rules.

The Django apps call it; nothing in it imports Django or the apps
(tests/gpusched/test_no_django.py).
"""

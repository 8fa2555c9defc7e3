"""What-if before a quota or cluster change (issue 22): replay the last N days of real
submissions through the engine's simulator under today's quotas and nodes and under the proposed
ones, and compare them per queue and per cohort (docs/SCHEDULING.md, "What-if replays").

- ``submissions``: the job history as the simulator's jobs (read-only).
- ``proposal``: the proposed quotas and node changes, and the world they make.
- ``replay``: one run of the simulator, measured per queue.
- ``compare``: both runs and the comparison's JSON.
- ``runs``: a ``WhatIfRun``'s life: asked for, replayed by the Celery task with its progress,
  kept until it expires.
"""

"""Importers that turn public GPU-cluster traces into simulator scenarios (docs/SCENARIOS.md).

Each importer streams its CSV files with the stdlib and returns a :class:`TraceImport`: the
scenario as a plain dict in the YAML shape (so it round-trips through YAML and
``parse_scenario``) plus :class:`ImportStats` saying what was read and what was skipped, and why.
No Django here: ``python -m gpusched.sim.traces`` runs the importers from a shell.
"""

from gpusched.sim.traces.common import ImportStats, TraceImport, TraceOptionError

__all__ = ["ImportStats", "TraceImport", "TraceOptionError"]

"""The simulator (``simulate``), the scenario format (``scenario``) with its report
(``report``), and the trace importers (``traces``); docs/SCENARIOS.md."""

"""The independent checker: replays a simulator report against its scenario and reports every
rule of docs/SCHEDULING.md it breaks (``checker.check_report``). It shares no code with the
engine."""

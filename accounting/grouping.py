"""What the chargeback's and the allocation API's group keys mean, as database expressions on the
ledger (`UsageRecord`), so every group is summed by the database (docs/ACCOUNTING.md):

- ``team``, ``queue``, ``user``, ``flavor``, ``service_class``, ``cluster``, ``job``: the
  row's own foreign keys;
- ``department``: the cohort of the row's queue *now* (the cohort the queue belongs to when the
  query runs; a queue moved to another cohort takes its past usage along). A queue without a
  cohort is in no department: ``__unallocated__``, as OpenCost names a missing label;
- ``label:<key>``: the value of that label on the row's job: the labels of the Kubernetes object
  it was taken in from (adopted Kueue workloads, `WorkloadReference.labels`), else the labels
  of its spec (jobs submitted through the platform, ``Job.spec["labels"]``). A job without
  the label (or with an empty value) is ``__unallocated__``.

`step_of` is the index of the step a row lies wholly inside (a balanced CASE over the step
ends: about log2(steps) comparisons per row), so one GROUP BY sums every step of a window.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.db.models import Case, Expression, F, IntegerField, TextField, Value, When
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.db.models.functions import Coalesce, NullIf

from queues.clusters import k8s_rules

GROUP_KEYS = ("team", "queue", "user", "flavor", "service_class", "cluster", "department")
LABEL_PREFIX = "label:"
UNALLOCATED = "__unallocated__"


class ParameterError(ValueError):
    """A query parameter is wrong; `parameter` names it."""

    def __init__(self, parameter: str, message: str) -> None:
        super().__init__(message)
        self.parameter = parameter
        self.message = message


def _check_label(parameter: str, key: str) -> None:
    name = key.removeprefix(LABEL_PREFIX)
    problem = "" if name else "the label key is empty"
    problem = problem or k8s_rules.qualified_name(name)
    if not problem and name.isdigit():  # JSON lookups read digits as an array index
        problem = f"{name!r}: a label key of digits only is not supported"
    if problem:
        raise ParameterError(parameter, f"{parameter}: {key!r}: {problem}.")


def parse_keys(parameter: str, values: Sequence[str], allowed: Sequence[str]) -> tuple[str, ...]:
    """Keys from repeated and/or comma-separated values (each one of `allowed` or
    ``label:<key>``); default ("team",)."""
    keys = [key.strip() for value in values for key in value.split(",") if key.strip()]
    for key in keys:
        if key.startswith(LABEL_PREFIX):
            _check_label(parameter, key)
        elif key not in allowed:
            choices = ", ".join([*allowed, f"{LABEL_PREFIX}<key>"])
            raise ParameterError(
                parameter, f"{parameter}: unknown key {key!r}; choose from {choices}."
            )
    if len(set(keys)) != len(keys):
        raise ParameterError(parameter, f"{parameter} repeats a key: {', '.join(keys)}.")
    return tuple(keys) or ("team",)


def expression(key: str) -> Expression:
    """The value a ledger row is grouped by for `key` (an id, a cohort id or a label's text;
    NULL for no department / no such label)."""
    if key == "department":
        return F("queue__cohort_id")
    if key.startswith(LABEL_PREFIX):
        name = key.removeprefix(LABEL_PREFIX)
        adopted = KeyTextTransform(name, "job__workload_ref__labels")
        submitted = KeyTextTransform(name, KeyTransform("labels", "job__spec"))
        text = Coalesce(adopted, submitted, output_field=TextField())
        return NullIf(text, Value(""), output_field=TextField())
    return F(f"{key}_id")


def expressions(keys: Sequence[str]) -> dict[str, Expression]:
    """Aliases (group_0, group_1, ...) to the keys' expressions, in the keys' order."""
    return {f"group_{index}": expression(key) for index, key in enumerate(keys)}


def step_of(ends: Sequence[datetime]) -> Expression:
    """For consecutive steps ending at `ends` (the first starting at or before every row's
    start): the index of the step a row lies wholly inside, NULL when it crosses a step's end."""

    def inside(index: int) -> Expression:
        return Case(
            When(end__lte=ends[index], then=Value(index)),
            default=Value(None),
            output_field=IntegerField(),
        )

    def tree(low: int, high: int) -> Expression:
        if low == high:
            return inside(low)
        middle = (low + high) // 2
        return Case(
            When(start__lt=ends[middle], then=tree(low, middle)),
            default=tree(middle + 1, high),
            output_field=IntegerField(),
        )

    return tree(0, len(ends) - 1)

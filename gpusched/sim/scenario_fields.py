"""Reading one mapping of a scenario file field by field, with precise error messages.

Used by ``scenario.py``; every problem becomes a ``ScenarioError`` naming file, entry and field.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any


class ScenarioError(ValueError):
    """A scenario that cannot be simulated; the message names file, entry and field."""


MISSING: object = object()


def kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {value!r}"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return repr(value)


class Entry:
    """One mapping of the file (the top level, a job, a node...) read field by field.

    Each accessor marks its key as known; ``finish`` rejects whatever key was not asked for.
    """

    def __init__(self, source: str, label: str, data: Mapping[str, Any]) -> None:
        self.source = source
        self.label = label
        self.data = data
        self.known: list[str] = []

    def where(self) -> str:
        return f"{self.source}: {self.label}" if self.label else self.source

    def error(self, key: str, problem: str) -> ScenarioError:
        return ScenarioError(f"{self.where()}: field '{key}': {problem}")

    def bad(self, key: str, expected: str, value: object) -> ScenarioError:
        return self.error(key, f"must be {expected}, got {kind(value)}")

    def raw(self, key: str, optional: bool) -> object:
        self.known.append(key)
        if key not in self.data:
            if optional:
                return MISSING
            raise self.error(key, "is required")
        return self.data[key]

    def finish(self) -> None:
        for key in self.data:
            if key not in self.known:
                hint = difflib.get_close_matches(str(key), self.known, n=1)
                guess = f" (did you mean '{hint[0]}'?)" if hint else ""
                allowed = ", ".join(self.known)
                raise ScenarioError(
                    f"{self.where()}: unknown field {str(key)!r}{guess}; known fields: {allowed}"
                )

    # -- scalars ----------------------------------------------------------------------------

    def string(self, key: str, optional: bool = False) -> str:
        value = self.raw(key, optional)
        if value is MISSING or (optional and value is None):
            return ""
        if not isinstance(value, str) or not value.strip():
            raise self.bad(key, "a non-empty string", value)
        return value

    def optional_string(self, key: str) -> str | None:
        return self.string(key, optional=True) or None

    def boolean(self, key: str, default: bool) -> bool:
        value = self.raw(key, optional=True)
        if value is MISSING:
            return default
        if not isinstance(value, bool):
            raise self.bad(key, "true or false", value)
        return value

    def integer(
        self, key: str, minimum: int, optional: bool = False, nullable: bool = False
    ) -> int | None:
        value = self.raw(key, optional)
        if value is MISSING or (nullable and value is None):
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.bad(key, f"an integer >= {minimum}", value)
        return value

    def required_integer(self, key: str, minimum: int) -> int:
        value = self.integer(key, minimum)
        assert value is not None
        return value

    def number(
        self,
        key: str,
        minimum: float,
        strict: bool = False,
        optional: bool = False,
        default: float | None = None,
        nullable: bool = False,
    ) -> Any:
        """A finite int or float; ``strict`` means ``> minimum`` instead of ``>=``."""
        value = self.raw(key, optional or default is not None)
        if value is MISSING:
            return default
        if nullable and value is None:
            return None
        ok = (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and math.isfinite(value)
            and (value > minimum if strict else value >= minimum)
        )
        if not ok:
            bound = f"> {minimum:g}" if strict else f">= {minimum:g}"
            raise self.bad(key, f"a number {bound}", value)
        return float(value)  # type: ignore[arg-type]

    def decimal(self, key: str, default: Decimal | None) -> Decimal | None:
        value = self.raw(key, optional=True)
        if value is MISSING or value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise self.bad(key, "a decimal number (string or number) >= 0", value)
        try:
            amount = Decimal(str(value).strip())
        except InvalidOperation:
            raise self.bad(key, "a decimal number (string or number) >= 0", value) from None
        if not amount.is_finite() or amount < 0:
            raise self.bad(key, "a decimal number (string or number) >= 0", value)
        return amount

    # -- containers -------------------------------------------------------------------------

    def mapping(self, key: str, optional: bool = False) -> Mapping[str, Any]:
        value = self.raw(key, optional)
        if value is MISSING or (optional and value is None):
            return {}
        if not isinstance(value, Mapping):
            raise self.bad(key, "a mapping", value)
        for inner in value:
            if not isinstance(inner, str):
                raise self.error(key, f"keys must be strings, got {kind(inner)}")
        return value

    def items(self, key: str, optional: bool = False, allow_empty: bool = True) -> list[Any]:
        value = self.raw(key, optional)
        if value is MISSING or (optional and value is None):
            return []
        if not isinstance(value, list):
            raise self.bad(key, "a list", value)
        if not value and not allow_empty:
            raise self.error(key, "must not be empty")
        return value

    def entries(self, key: str, optional: bool = False, allow_empty: bool = True) -> list[Entry]:
        """A list of mappings, each returned as an ``Entry`` labelled ``key[i] (name)``."""
        result = []
        prefix = f"{self.label} > " if self.label else ""
        for index, item in enumerate(self.items(key, optional, allow_empty)):
            label = f"{prefix}{key}[{index}]"
            if not isinstance(item, Mapping):
                raise ScenarioError(f"{self.source}: {label}: must be a mapping, got {kind(item)}")
            name = item.get("name", item.get("name_prefix"))
            if isinstance(name, str):
                label = f"{label} ({name})"
            result.append(Entry(self.source, label, item))
        return result

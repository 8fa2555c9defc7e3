"""The REST API's JSON parser (its own module: DRF imports parser classes while loading its
views, so this must not import rest_framework.views)."""

from __future__ import annotations

import codecs
import math
from typing import IO, Any

from django.conf import settings
from rest_framework import exceptions, parsers
from rest_framework.utils import json

MAX_JSON_DEPTH = 64
"""Arrays and objects nested deeper than this are refused (no request body of the API needs more
than a handful; Python's parser itself gives up near 1,000 with a RecursionError)."""

TOO_DEEP = (
    f"JSON parse error - arrays and objects are nested too deeply (at most {MAX_JSON_DEPTH} "
    "levels)."
)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number out of range: {text}")
    return value


def nesting_depth(value: Any) -> int:
    """How deeply arrays and objects nest in ``value`` (a scalar: 0), without recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if depth > MAX_JSON_DEPTH:
            break  # deep enough to refuse: no need to walk the rest
        stack.extend((child, depth + 1) for child in children)
    return deepest


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, except that a number too large for a float (``1e999``) is a parse
    error (400) instead of an infinite float that later crashes integer lookups (500), and so
    is nesting deeper than MAX_JSON_DEPTH (``[[[[…]]]]``: a RecursionError, 500, otherwise)."""

    def parse(
        self,
        stream: IO[Any],
        media_type: str | None = None,
        parser_context: dict[str, Any] | None = None,
    ) -> Any:
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            decoded = codecs.getreader(encoding)(stream)
            parse_constant = json.strict_constant if self.strict else None
            data = json.load(decoded, parse_constant=parse_constant, parse_float=_finite_float)
        except RecursionError:
            raise exceptions.ParseError(TOO_DEEP) from None
        except ValueError as exc:
            raise exceptions.ParseError(f"JSON parse error - {exc}") from exc
        if nesting_depth(data) > MAX_JSON_DEPTH:
            raise exceptions.ParseError(TOO_DEEP)
        return data

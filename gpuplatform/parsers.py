"""The REST API's JSON parser (its own module: DRF imports parser classes while loading its
views, so this must not import rest_framework.views)."""

from __future__ import annotations

import codecs
import math
from typing import IO, Any

from django.conf import settings
from rest_framework import exceptions, parsers
from rest_framework.utils import json


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number out of range: {text}")
    return value


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, except that a number too large for a float (``1e999``) is a parse
    error (400) instead of an infinite float that later crashes integer lookups (500)."""

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
            return json.load(decoded, parse_constant=parse_constant, parse_float=_finite_float)
        except ValueError as exc:
            raise exceptions.ParseError(f"JSON parse error - {exc}") from exc

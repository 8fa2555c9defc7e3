"""Cells of every CSV export, safe to open in a spreadsheet (issue 26).

A cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is taken for a
formula by Excel, LibreOffice and Google Sheets (CSV injection: a username ``@SUM(...)`` or a
team's text running a command). Such a cell is written with a leading ``'``, which the
spreadsheet shows as text; a plain number (``-12.50``) is left as it is. Every CSV writer of the
platform passes its rows through ``safe_row``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
PLAIN_NUMBER = re.compile(r"[+-]?[0-9]+(\.[0-9]+)?")


def safe_cell(value: Any) -> Any:
    """``value``, with a ``'`` in front when it is text a spreadsheet would run as a formula."""
    if (
        isinstance(value, str)
        and value.startswith(FORMULA_STARTS)
        and not PLAIN_NUMBER.fullmatch(value)
    ):
        return "'" + value
    return value


def safe_row(values: Iterable[Any]) -> list[Any]:
    return [safe_cell(value) for value in values]

"""Accounting's service entry points (what the cycle, tasks, views and the API call)."""

from accounting.budgets import check_budgets
from accounting.ledger import accrue_usage
from accounting.statements import add_adjustment, close_month, generate_statement

__all__ = [
    "accrue_usage",
    "add_adjustment",
    "check_budgets",
    "close_month",
    "generate_statement",
]

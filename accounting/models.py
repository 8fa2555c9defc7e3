"""Accounting models (usage ledger, price lists, charges, statements) arrive with the accounting
issue; accounting/rating.py is the pure rating core."""

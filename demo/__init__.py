"""The living demo: a month of replayed history (``seed_demo --history``) and live traffic."""

"""Per-user API tokens: created, named, listed and revoked by their owner (UI and API).

Only a SHA-256 hash of the secret is stored; the secret is shown once, at creation.
"""

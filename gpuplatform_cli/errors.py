"""The CLI's failures and their exit codes (README "Command line" lists them)."""

from __future__ import annotations

from enum import IntEnum


class Exit(IntEnum):
    OK = 0
    SERVER = 1  # the server failed (5xx) or answered something that is not the API's
    USAGE = 2  # bad arguments or an unreadable / invalid job file (argparse's own code too)
    CONFIG = 3  # no server or token, or a config file others may read
    REFUSED = 4  # 400: the request names a field the server refused; 409: the job has ended
    DENIED = 5  # 401: the token was refused; 403: the role may not do this
    NOT_FOUND = 6  # 404: no such job or queue, or one of another team
    RATE_LIMITED = 7  # 429: too many submissions or bad tokens; try again later
    UNREACHABLE = 8  # connection refused, unknown host, timeout, TLS failure


class CliError(Exception):
    """A failure to tell the user in ``message`` and exit with ``code``."""

    def __init__(self, code: Exit, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

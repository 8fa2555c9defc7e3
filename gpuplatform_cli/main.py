"""``gpuplatform <command>``: the argument parser and ``main()`` (the console script's entry)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence

from gpuplatform_cli import commands
from gpuplatform_cli.client import Client
from gpuplatform_cli.config import load_settings
from gpuplatform_cli.errors import CliError, Exit

STATES = ("pending", "admitted", "running", "stopping", "succeeded", "failed", "cancelled")

EPILOG = """\
server and token: GPUPLATFORM_URL and GPUPLATFORM_TOKEN, else 'url' and 'token' in
~/.config/gpuplatform/config.yaml (mode 0600).
exit codes: 0 done, 1 server error, 2 usage or job file, 3 configuration, 4 refused (400, 409),
5 token refused or not allowed (401, 403), 6 not found (404), 7 rate limited (429),
8 server not reachable."""


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"a whole number from 1: {text!r}")
    return int(text)


def _natural(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"a whole number from 0: {text!r}")
    return int(text)


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(
        prog="gpuplatform",
        description="Submit and follow GPU jobs on gpuplatform.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = root.add_subparsers(dest="command", required=True, metavar="COMMAND")
    submit = sub.add_parser("submit", help="submit a job described in a YAML file")
    submit.add_argument("file", help="the job as YAML: the REST body's fields ('-': stdin)")
    submit.add_argument(
        "--estimate", action="store_true", help="only say what would happen now; submit nothing"
    )
    submit.add_argument(
        "--array",
        type=_positive,
        metavar="N",
        help="a job array: N jobs of this file, all or none (Slurm's --array=0-(N-1))",
    )
    listing = sub.add_parser("list", help="your jobs, newest first")
    listing.add_argument("--state", action="append", choices=STATES, default=[])
    listing.add_argument("--all", action="store_true", help="your teams' jobs, not only yours")
    listing.add_argument("--limit", type=_positive, default=50)
    for name, text in (
        ("status", "a job's state, position in its queue and estimated start"),
        ("why", "why a job waits (or stopped), with its latest events"),
        ("cancel", "cancel a job (a running one stops with its class's grace period)"),
    ):
        sub.add_parser(name, help=text).add_argument("job", type=_positive, metavar="ID")
    logs = sub.add_parser("logs", help="a job's output, per worker")
    logs.add_argument("job", type=_positive, metavar="ID")
    logs.add_argument("--worker", type=_natural, help="only this worker (0, 1, ...)")
    logs.add_argument("--tail", type=_positive, help="only the last N lines of each worker")
    quota = sub.add_parser("quota", help="your queues: nominal, used, borrowed, lent, share")
    quota.add_argument("--team", help="only this team's queues")
    return root


def run(args: argparse.Namespace, client: Client) -> str:
    if args.command == "submit":
        return commands.submit(client, args.file, estimate=args.estimate, array=args.array)
    if args.command == "list":
        return commands.list_jobs(client, args.state, everyone=args.all, limit=args.limit)
    if args.command == "status":
        return commands.status(client, args.job)
    if args.command == "why":
        return commands.why(client, args.job)
    if args.command == "cancel":
        return commands.cancel(client, args.job)
    if args.command == "logs":
        return commands.logs(client, args.job, args.worker, args.tail)
    return commands.quota(client, args.team)


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Run one command; returns the exit code (errors.Exit)."""
    args = parser().parse_args(argv)  # bad arguments: argparse prints usage and exits 2
    try:
        client = Client(load_settings(os.environ if environ is None else environ))
        print(run(args, client))
    except CliError as error:
        print(f"gpuplatform: {error.message}", file=sys.stderr)
        return int(error.code)
    except KeyboardInterrupt:
        return 130
    return int(Exit.OK)

"""Command line of the trace importers, shared by ``python -m gpusched.sim.traces`` and
``python manage.py import_trace`` (both take the same arguments)."""

from __future__ import annotations

import argparse
import inspect
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any, TextIO

import yaml

from gpusched.sim.traces.alibaba import POD_LISTS, SHARE_MODES, import_alibaba
from gpusched.sim.traces.common import DEFAULT_CYCLE_INTERVAL, TraceImport, TraceOptionError
from gpusched.sim.traces.itp import CLUSTERS, DEFAULT_LOAD, import_itp
from gpusched.sim.traces.philly import import_philly

TRACES = ("philly", "alibaba", "itp")

ATTRIBUTION: Mapping[str, str] = MappingProxyType(
    {
        "philly": "Microsoft Philly traces (Jeon et al., USENIX ATC '19; CC-BY-4.0), per-VC split "
        "and durations from the PCS artifact (MIT), VC quotas from the HeliosArtifact (MIT)",
        "alibaba": "Alibaba cluster-trace-gpu-v2023 (OpenB; Weng et al., USENIX ATC '23); "
        "free for research and study",
        "itp": "Microsoft ITP 2021 traces from the ElasticFlow artifact (MIT)",
    }
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """One sub-command per trace, each with its options (names match the importers' keywords)."""
    sub = parser.add_subparsers(dest="trace", required=True, metavar="{philly,alibaba,itp}")
    philly = sub.add_parser("philly", help="Microsoft Philly, one queue per virtual cluster")
    _common(philly)
    philly.add_argument("--vcs", type=_names, help="comma-separated VCs (default: all with quota)")
    philly.add_argument(
        "--vc-offset", type=float, default=0.0, help="seconds added to each VC's clock per index"
    )
    philly.add_argument(
        "--quota-scale", type=float, default=1.0, help="multiply every VC quota (and the cluster)"
    )

    alibaba = sub.add_parser("alibaba", help="Alibaba OpenB 2023, GPU pods on GPU nodes")
    _common(alibaba)
    alibaba.add_argument("--pod-list", choices=POD_LISTS, default="default")
    alibaba.add_argument(
        "--share", choices=SHARE_MODES, default="round", help="GPU-share pods: whole GPU or slices"
    )
    alibaba.add_argument(
        "--mig-fraction", type=float, default=0.25, help="share of nodes exposing 1/7 slices"
    )
    alibaba.add_argument(
        "--node-fraction", type=float, default=1.0, help="share of each model's nodes to keep"
    )
    alibaba.add_argument("--tenants", type=int, default=4, help="queues the pods are hashed to")

    itp = sub.add_parser("itp", help="Microsoft ITP 2021, one queue per cluster file")
    _common(itp)
    itp.add_argument("--clusters", type=_names, help=f"comma-separated, of {', '.join(CLUSTERS)}")
    itp.add_argument("--nodes", type=int, help="8-GPU nodes (default: sized by --load)")
    itp.add_argument(
        "--load", type=float, default=DEFAULT_LOAD, help="offered load the auto size aims at"
    )


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output", "-o", help="scenario YAML to write (default: stdout)")
    parser.add_argument("--trace-dir", type=Path, help="folder of the trace's CSV files")
    parser.add_argument("--start", type=float, help="window start, seconds of the trace's clock")
    parser.add_argument("--end", type=float, help="window end (exclusive)")
    parser.add_argument("--max-jobs", type=int, help="keep only the earliest N jobs")
    parser.add_argument(
        "--noise", type=float, default=0.0, help="sigma of log-normal runtime-estimate error"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cycle-interval", type=float, default=DEFAULT_CYCLE_INTERVAL)
    parser.add_argument("--name", help="scenario name (default: derived from the options)")


def _names(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


IMPORTERS: Mapping[str, Callable[..., TraceImport]] = MappingProxyType(
    {
        "philly": import_philly,
        "alibaba": import_alibaba,
        "itp": import_itp,
    }
)


def run_import(options: dict[str, Any]) -> TraceImport:
    """Call the importer named by ``options['trace']`` with the options it takes (others, such
    as ``output`` or Django's ``verbosity``, are ignored)."""
    trace = options["trace"]
    if trace not in IMPORTERS:
        raise TraceOptionError(f"unknown trace {trace!r} (known: {', '.join(TRACES)})")
    importer = IMPORTERS[trace]
    accepted = inspect.signature(importer).parameters
    kwargs = {k: v for k, v in options.items() if k in accepted and k != "trace_dir"}
    return importer(options.get("trace_dir"), **kwargs)


def dump_yaml(result: TraceImport, trace: str, out: TextIO) -> None:
    """The scenario as YAML (one flow-style line per job and node), after a comment header
    with the source's attribution and the import statistics."""
    out.write(f"# Imported from {ATTRIBUTION[trace]}.\n")
    out.write(f"# {result.stats.summary()}\n")
    yaml.safe_dump(result.scenario, out, sort_keys=False, default_flow_style=None, width=1000)


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gpusched.sim.traces", description="Turn a public GPU trace into a scenario."
    )
    add_arguments(parser)
    options = vars(parser.parse_args(argv))
    out = stdout or sys.stdout
    try:
        result = run_import(options)
    except TraceOptionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    write_result(result, options["trace"], options.get("output"), out)
    return 0


def write_result(result: TraceImport, trace: str, output: str | None, out: TextIO) -> None:
    if output:
        with Path(output).open("w") as f:
            dump_yaml(result, trace, f)
        print(f"wrote {output}: {result.stats.summary()}", file=out)
    else:
        dump_yaml(result, trace, out)

"""The importers' command line: ``python -m gpusched.sim.traces`` and ``manage.py import_trace``."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpusched.sim.scenario import load_scenario
from gpusched.sim.traces.cli import main


def test_cli_writes_a_scenario_file_the_loader_accepts(philly_dir: Path, tmp_path: Path) -> None:
    output = tmp_path / "philly.yaml"
    out = io.StringIO()
    code = main(
        [
            "philly",
            "--trace-dir",
            str(philly_dir),
            "--vcs",
            "ed69ec,103959",
            "--max-jobs",
            "40",
            "--vc-offset",
            "3600",
            "--noise",
            "0.3",
            "--output",
            str(output),
        ],
        stdout=out,
    )
    assert code == 0
    assert f"wrote {output}: " in out.getvalue() and "40 jobs" in out.getvalue()
    text = output.read_text()
    assert text.startswith("# Imported from Microsoft Philly traces")
    scenario = load_scenario(output)
    assert len(scenario.jobs) == 40
    assert [q.name for q in scenario.queues] == ["ed69ec", "103959"]


def test_cli_rejects_a_bad_option_with_its_name_and_exit_status_2(
    itp_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["itp", "--trace-dir", str(itp_dir), "--clusters", "cluster42"])
    assert code == 2
    assert "itp: option 'clusters': unknown cluster 'cluster42'" in capsys.readouterr().err


def test_python_dash_m_runs_without_django(alibaba_dir: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpusched.sim.traces",
            "alibaba",
            "--trace-dir",
            str(alibaba_dir),
            "--share",
            "mig",
            "--max-jobs",
            "5",
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).resolve().parents[4],
    )
    assert done.returncode == 0, done.stderr
    assert "name: alibaba-default-mig0.25-max5" in done.stdout
    assert "g2-1g" in done.stdout


def test_manage_py_command_takes_the_same_arguments(itp_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("django")
    from django.core.management.base import CommandError

    from queues.management.commands.import_trace import Command

    output = tmp_path / "itp.yaml"
    command = Command(stdout=io.StringIO())
    parser = command.create_parser("manage.py", "import_trace")
    options = parser.parse_args(
        ["itp", "--trace-dir", str(itp_dir), "--max-jobs", "30", "--output", str(output)]
    )
    command.execute(**vars(options))
    assert len(load_scenario(output).jobs) == 30

    bad = parser.parse_args(["itp", "--trace-dir", str(itp_dir), "--nodes", "0"])
    with pytest.raises(CommandError, match="option 'nodes'"):
        command.execute(**vars(bad))


def test_every_importer_writes_yaml_that_reads_back_as_the_same_dict(
    philly_dir: Path, alibaba_dir: Path, itp_dir: Path
) -> None:
    from gpusched.sim.traces.alibaba import import_alibaba
    from gpusched.sim.traces.cli import dump_yaml
    from gpusched.sim.traces.itp import import_itp
    from gpusched.sim.traces.philly import import_philly

    results = {
        "philly": import_philly(philly_dir, max_jobs=50, noise=0.4),
        "alibaba": import_alibaba(alibaba_dir, share="mig", max_jobs=50),
        "itp": import_itp(itp_dir, max_jobs=50),
    }
    for trace, result in results.items():
        text = io.StringIO()
        dump_yaml(result, trace, text)
        assert yaml.safe_load(text.getvalue()) == result.scenario, trace

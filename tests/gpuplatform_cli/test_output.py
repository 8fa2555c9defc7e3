"""The CLI on canned answers over real HTTP (a local http.server): the logs endpoint's contract
(built apart; the live test comes after the merge), server errors, answers that are not the
API's, and a server that is not there."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from gpuplatform_cli.errors import Exit
from gpuplatform_cli.main import main
from tests.gpuplatform_cli.conftest import Canned

LOGS = {
    "job": 42,
    "cluster": "gpu-east",
    "workers": [
        {
            "index": 0, "pod": "train-42-0", "node": "n1", "phase": "running", "reason": "",
            "message": "", "restarts": 0, "lines": ["epoch 1 loss 2.31", "epoch 2 loss 1.87"],
        },
        {
            "index": 1, "pod": "train-42-1", "node": "n2", "phase": "failed",
            "reason": "OOMKilled", "message": "container used 80Gi", "restarts": 2, "lines": [],
        },
    ],
    "detail": "Worker 1 restarted twice.",
}  # fmt: skip


def run(canned: Canned, tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str):  # type: ignore[no-untyped-def]
    env = {
        "GPUPLATFORM_URL": canned.url,
        "GPUPLATFORM_TOKEN": "gpp_x_y",
        "GPUPLATFORM_CONFIG": str(tmp_path / "none.yaml"),
    }
    code = main(list(args), environ=env)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_logs_print_each_worker_with_its_pod_node_phase_and_why(
    canned: Canned, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    canned.body = LOGS
    code, out, _ = run(canned, tmp_path, capsys, "logs", "42", "--worker", "0", "--tail", "50")
    assert code == 0
    assert canned.requests == ["/api/v1/jobs/42/logs/?worker=0&tail=50"]
    assert out.splitlines() == [
        "Job 42 on cluster gpu-east",
        "Worker 1 restarted twice.",
        "== worker 0  pod train-42-0  node n1  running ==",
        "epoch 1 loss 2.31",
        "epoch 2 loss 1.87",
        "== worker 1  pod train-42-1  node n2  failed  restarts 2 ==",
        "(OOMKilled container used 80Gi)",
        "(no output)",
    ]


def test_logs_of_a_job_without_workers_say_so(
    canned: Canned, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    canned.body = {"job": 7, "cluster": "", "workers": [], "detail": "The job is pending."}
    code, out, _ = run(canned, tmp_path, capsys, "logs", "7")
    assert code == 0 and canned.requests == ["/api/v1/jobs/7/logs/"]
    assert "The job is pending." in out and "(no workers" in out


def test_a_server_error_and_an_answer_that_is_not_json(
    canned: Canned, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    canned.status, canned.body = 500, {"detail": "database down"}
    code, _, err = run(canned, tmp_path, capsys, "list")
    assert code == Exit.SERVER and "The server failed (500" in err and "database down" in err
    canned.status, canned.raw = 200, b"<html>Sign in</html>"
    code, _, err = run(canned, tmp_path, capsys, "list")
    assert code == Exit.SERVER and "did not answer JSON" in err


def test_a_server_that_is_not_there(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {"GPUPLATFORM_URL": f"http://127.0.0.1:{port}", "GPUPLATFORM_TOKEN": "gpp_x_y",
           "GPUPLATFORM_CONFIG": str(tmp_path / "none.yaml")}  # fmt: skip
    code = main(["quota"], environ=env)
    err = capsys.readouterr().err
    assert code == Exit.UNREACHABLE
    assert f"Cannot reach http://127.0.0.1:{port}: Connection refused" in err


def test_bad_arguments_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["status", "abc"], environ={})
    assert stop.value.code == Exit.USAGE
    assert "a whole number from 1" in capsys.readouterr().err


def test_a_job_beyond_the_listed_pending_jobs_is_not_called_unranked() -> None:
    from gpuplatform_cli import output

    assert output.position_text(None, 1500, "t/q", 1000) == (
        "beyond the first 1000 of 1500 pending in t/q"
    )
    entry = {"position": 3}
    assert output.position_text(entry, 5, "t/q", 5) == "3 of 5 pending in t/q"
    assert output.position_text(None, 5, "t/q", 5).startswith("not ranked yet")

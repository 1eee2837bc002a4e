"""`upguard machines detect` on metric exports: the machine that parts from its peers, named with
its metrics and times, at 1 s agent resolution and at 5-minute export resolution; nothing on a
healthy cluster; bad input named by file and line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from conftest import REPO, upguard

sys.path.insert(0, str(REPO / "examples"))
from machine_metrics import START, write_cluster  # noqa: E402


def test_names_the_starved_machine_with_its_metrics_and_start(tmp_path: Path) -> None:
    csv = tmp_path / "metrics.csv"
    write_cluster(csv, machines=6, points=300, step=1.0, faulty=3, fault_at=150, seed=7)
    result = upguard("machines", "detect", "--input", csv, "--json")
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["schema"] == "upguard.machines/1"
    assert len(report["detections"]) == 1, report
    found = report["detections"][0]
    assert found["machine"] == "node-3"
    assert "cpu_utilization" in found["metrics"] or "training_step_seconds" in found["metrics"]
    assert START + 150 <= found["start"] <= START + 160, found
    assert found["alert"] - found["start"] == 3  # four windows in a row, one second apart
    assert found["end"] == START + 299
    metric = found["metrics"][0]
    band = found["peers"][metric]
    assert band["machine"] > band["peers_p90"]
    text = upguard("machines", "detect", "--input", csv)
    assert text.returncode == 1
    assert "node-3 parts from its 5 peers" in text.stdout, text.stdout


def test_example_command_from_the_readme(tmp_path: Path) -> None:
    csv = tmp_path / "metrics.csv"
    made = __import__("subprocess").run(
        [sys.executable, str(REPO / "examples/machine_metrics.py"), "-o", str(csv),
         "--faulty", "3"], capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    result = upguard("machines", "detect", "--input", csv)
    assert result.returncode == 1
    assert result.stdout.startswith("upguard machines: node-3 parts from its 7 peers"), result.stdout


def test_healthy_cluster_raises_nothing(tmp_path: Path) -> None:
    for seed in (1, 2, 3):
        csv = tmp_path / f"healthy{seed}.csv"
        write_cluster(csv, machines=8, points=400, step=1.0, faulty=None, fault_at=0, seed=seed)
        result = upguard("machines", "detect", "--input", csv, "--json")
        assert result.returncode == 0, result.stdout + result.stderr
        assert json.loads(result.stdout)["detections"] == []


def test_five_minute_exports_with_iso_times(tmp_path: Path) -> None:
    csv = tmp_path / "export.csv"
    write_cluster(csv, machines=5, points=96, step=300.0, faulty=0, fault_at=60, seed=3,
                  iso=True)
    result = upguard("machines", "detect", "--input", csv, "--json")
    assert result.returncode == 1, result.stderr
    found = json.loads(result.stdout)["detections"][0]
    assert found["machine"] == "node-0"
    assert isinstance(found["start"], str) and found["start"].endswith("Z")
    assert json.loads(result.stdout)["step_seconds"] == 300


def test_bad_input_is_named(tmp_path: Path) -> None:
    csv = tmp_path / "bad.csv"
    csv.write_text("time,machine,metric,value\n1,a,cpu,0.5\n2,a,cpu\n")
    result = upguard("machines", "detect", "--input", csv)
    assert result.returncode == 2
    assert f"{csv}:3: expected 4 fields" in result.stderr
    result = upguard("machines", "detect", "--input", csv, "--method", "vae")
    assert result.returncode == 2 and "--method" in result.stderr
    result = upguard("machines", "nonsense")
    assert result.returncode == 2 and "upguard machines detect" in result.stderr

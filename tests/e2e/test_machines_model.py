"""Minder's model: `upguard machines fit` learns the denoisers (and from labels the metric
priority) from healthy history, `detect --model` names the faulty machine with them and stays
quiet on healthy clusters, `--html` draws the machine against its peers, and `--watch` prints a
detection once while it re-scans a live source."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from conftest import ONE_TORCH, REPO, upguard

sys.path.insert(0, str(REPO / "examples"))
from machine_metrics import START, write_cluster  # noqa: E402

pytestmark = ONE_TORCH


def fit(tmp_path: Path, *extra: str) -> Path:
    healthy = tmp_path / "healthy.csv"
    write_cluster(healthy, machines=8, points=400, step=1.0, faulty=None, fault_at=0, seed=21)
    model = tmp_path / "model.json"
    result = upguard("machines", "fit", "--input", healthy, "-o", model, "--train-steps", "300",
                     *extra)
    assert result.returncode == 0, result.stderr
    assert "wrote" in result.stdout, result.stdout
    return model


def test_fit_then_detect_names_the_machine_and_keeps_quiet_on_healthy(tmp_path: Path) -> None:
    model = fit(tmp_path)
    doc = json.loads(model.read_text())
    assert doc["format"] == "upguard.machines-model/1"
    assert doc["window"] == 8 and doc["hidden"] == 4 and doc["latent"] == 8
    assert set(doc["metrics"]) == {"cpu_utilization", "memory_used_bytes", "training_step_seconds"}
    for entry in doc["metrics"].values():
        assert len(entry["w_hh"]) == 4 * 4 * 4 and len(entry["w_mu"]) == 8 * 4
        assert entry["score_limit"] > 0
    faulty = tmp_path / "faulty.csv"
    write_cluster(faulty, machines=8, points=300, step=1.0, faulty=5, fault_at=150, seed=22)
    html = tmp_path / "report.html"
    result = upguard("machines", "detect", "--model", model, "--input", faulty, "--json",
                     "--html", html)
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert [d["machine"] for d in report["detections"]] == ["node-5"], report
    found = report["detections"][0]
    assert START + 150 <= found["start"] <= START + 158, found
    assert found["alert"] <= START + 150 + 10
    page = html.read_text()
    assert page.count('<section class="detection" data-machine="node-5">') == 1
    assert '<polyline class="machine"' in page and '<polygon class="band"' in page
    for seed in (23, 24):
        healthy = tmp_path / f"healthy{seed}.csv"
        write_cluster(healthy, machines=8, points=300, step=1.0, faulty=None, fault_at=0,
                      seed=seed)
        quiet = upguard("machines", "detect", "--model", model, "--input", healthy, "--json")
        assert quiet.returncode == 0, quiet.stdout
        assert json.loads(quiet.stdout)["detections"] == []


def test_labels_put_the_telling_metric_first(tmp_path: Path) -> None:
    history = tmp_path / "history.csv"
    write_cluster(history, machines=8, points=400, step=1.0, faulty=2, fault_at=250, seed=31)
    labels = tmp_path / "labels.csv"
    labels.write_text(f"machine,start,end,kind\nnode-2,{START + 250},{START + 399},cpu_hog\n")
    model = tmp_path / "model.json"
    result = upguard("machines", "fit", "--input", history, "-o", model, "--labels", labels,
                     "--train-steps", "300")
    assert result.returncode == 0, result.stderr
    doc = json.loads(model.read_text())
    assert doc["priority_source"] == "labels"
    # The fault moves cpu and step time; memory never tells it.
    assert doc["priority"][-1] == "memory_used_bytes", doc["priority"]


def test_model_errors_name_the_file_and_the_fix(tmp_path: Path) -> None:
    bad = tmp_path / "model.json"
    bad.write_text('{"format": "something-else"}')
    csv = tmp_path / "m.csv"
    write_cluster(csv, machines=4, points=50, step=1.0, faulty=None, fault_at=0, seed=1)
    result = upguard("machines", "detect", "--model", bad, "--input", csv)
    assert result.returncode == 2
    assert str(bad) in result.stderr and "upguard.machines-model/1" in result.stderr
    result = upguard("machines", "detect", "--method", "minder", "--input", csv)
    assert result.returncode == 2 and "--model" in result.stderr
    result = upguard("machines", "fit", "--input", csv)
    assert result.returncode == 2 and "-o MODEL" in result.stderr


def test_watch_prints_each_detection_once(tmp_path: Path) -> None:
    live = tmp_path / "live.csv"
    now = time.time()
    write_cluster(live, machines=6, points=240, step=1.0, faulty=1, fault_at=120, seed=41,
                  start=now - 240)
    result = upguard("machines", "detect", "--input", live, "--watch", "--every", "1",
                     "--duration", "3.5", "--json", timeout=60)
    assert result.returncode == 1, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, result.stdout  # three passes, one detection printed once
    assert [d["machine"] for d in lines[0]["detections"]] == ["node-1"]
    assert "watching" in result.stderr

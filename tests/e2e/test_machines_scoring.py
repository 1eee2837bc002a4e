"""The scoring of the machines evaluation (tests/faults/machines_scenarios.py), on made-up labels
and detections: what counts as a true positive, a false alarm, and the fault-to-alert time."""

from __future__ import annotations

import sys

import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "tests" / "faults"))
from machines_scenarios import GRACE_S, score  # noqa: E402

LABELS = [{"machine": "node-1", "kind": "cpu_quota", "start": 100.0, "end": 130.0},
          {"machine": "node-2", "kind": "link_down", "start": 160.0, "end": 190.0}]


def found(machine: str, start: float, end: float, alert: float) -> dict:
    return {"machine": machine, "start": start, "end": end, "alert": alert}


def test_the_right_machine_inside_the_fault_is_a_true_positive():
    scores = score([found("node-1", 102, 135, 105)], LABELS)
    quota, total = scores["cpu_quota"], scores["all"]
    assert (quota.faults, quota.detected, quota.detections, quota.true_positives) == (1, 1, 1, 1)
    assert quota.alert_s == [5.0] and quota.f1 == 1.0
    assert scores["link_down"].recall == 0.0 and scores["link_down"].precision is None
    assert (total.precision, total.recall) == (1.0, 0.5)


def test_a_peer_named_during_a_fault_counts_against_its_kind():
    scores = score([found("node-3", 102, 110, 105)], LABELS)
    assert scores["cpu_quota"].detections == 1 and scores["cpu_quota"].precision == 0.0
    assert scores["cpu_quota"].recall == 0.0


def test_detections_outside_every_fault_are_healthy_false_alarms():
    scores = score([found("node-1", 20, 30, 23), found("node-1", 131 + GRACE_S, 150, 145)],
                   LABELS)
    assert scores["healthy"].detections == 2 and scores["healthy"].true_positives == 0
    assert scores["all"].precision == 0.0


def test_raised_before_the_fault_is_not_the_faults_but_one_sample_early_is():
    early = score([found("node-1", 90, 120, 95)], LABELS)["cpu_quota"]
    assert early.detected == 0 and early.detections == 1
    noise_flag_first = score([found("node-1", 99.2, 120, 99.2)], LABELS)["cpu_quota"]
    assert noise_flag_first.detected == 1 and noise_flag_first.alert_s == pytest.approx([-0.8])


def test_grace_after_the_fault_ends():
    late = score([found("node-2", 185, 199, 188)], LABELS)["link_down"]
    assert late.detected == 1
    too_late = score([found("node-2", 201 + GRACE_S, 220, 205 + GRACE_S)], LABELS)
    assert too_late["link_down"].detected == 0 and too_late["healthy"].detections == 1

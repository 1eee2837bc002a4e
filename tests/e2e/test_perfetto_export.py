"""`upguard show --perfetto` (issue 18): a step's recorded ops as Chrome trace-event JSON for the
Perfetto UI, one slice per op shown, nested as the ops were."""

from __future__ import annotations

import json

from conftest import show_json, upguard


def test_step_as_trace_events(runs, reference, tmp_path):
    out = tmp_path / "a.json"
    result = upguard("show", reference, "--step", "2", "--perfetto", out)
    assert result.returncode == 0, result.stderr
    trace = json.loads(out.read_text())
    slices = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    ops = show_json(reference, "--step", "2")["steps"][0]["ops"]
    assert [s["name"] for s in slices] == [op["op"] for op in ops]
    assert {s["tid"] for s in slices} == {2}
    # Slices nest: an op's slice holds the slices of the ops nested in it, and no other.
    for at, (piece, op) in enumerate(zip(slices, ops)):
        assert piece["ts"] + piece["dur"] == op["index"] + 1
        inside = ops[piece["ts"]:op["index"]]
        assert all(o["depth"] > op["depth"] for o in inside), (at, op["op"])
    names = {e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M" and "name" in e["args"]}
    assert "step 2" in names

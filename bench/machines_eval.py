"""`upguard machines` against injected faults (issue 16, part 3): the full table.

Four machines on this host (tests/faults/machines_cluster.py: each a network namespace, a cgroup
of its own, its own agent and one rank of the DDP GPT), one training run with every fault kind
in turn on machines 1..3 (tests/faults/machines_scenarios.py: 30 s each, 30 s of recovery
after each), and a separate healthy run. Every method the build has (raw, mahalanobis, and
minder with a model fitted on another healthy run once `machines fit` exists) with the
continuity check (the default) and without (--continuity 1), scored against the injector's
labels: precision, recall, F1 and fault-to-alert time per fault kind. Root only. Markdown out.

    /usr/bin/python3 bench/machines_eval.py --build build/release [--quick] [--keep DIR]
    /usr/bin/python3 bench/machines_eval.py --rescore DIR     # DIR of an earlier --keep

--quick: the short scenario of `make test` (three faults of 20 s) and a 60 s healthy run.
--keep: the runs stay in DIR, and a run already finished there is scored again, not rerun.
--rescore: no training; the runs an earlier --keep left, scored again (a new detector, say).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "faults"))
from machines_scenarios import (FULL, GRACE_S, QUICK, Run, Score, concatenate, detect,  # noqa
                                fit, healthy, load_run, methods, run_scenario, score)

PRECISION_TARGET, F1_TARGET, ALERT_TARGET_S = 0.95, 0.93, 10.0
CONTINUITIES = (None, 1)  # the default check, and none


def number(value: Optional[float], digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def mark(ok: bool) -> str:
    return "**PASS**" if ok else "**MISS**"


def warmup_csv(run: Run, out: Path) -> Path:
    """The run's metrics before its first fault: healthy history to fit on."""
    first = min((label["start"] for label in run.labels), default=run.span[1])
    concatenate([run.run_dir / f"node-{host}.csv" for host in range(run.scenario.machines)],
                out, (run.span[0], first))
    return out


def evaluate(upguard: str, faulty: Run, clean: Run, model: Optional[Path]) -> List[Dict]:
    """One row set per (method, continuity): the scores and the healthy run's detections."""
    rows = []
    for method in methods(upguard):
        if method == "minder" and model is None:
            continue
        for continuity in CONTINUITIES:
            use = model if method == "minder" else None
            found = detect(upguard, faulty.metrics, method, continuity, use)
            false_alarms = detect(upguard, clean.metrics, method, continuity, use)
            rows.append({"method": method, "continuity": continuity or "default",
                         "scores": score(found, faulty.labels), "detections": found,
                         "healthy": false_alarms})
    return rows


def table(rows: List[Dict], kinds: List[str]) -> List[str]:
    lines = ["| method | continuity | fault kind | faults | detected | detections | P | R | F1 "
             "| mean alert (s) |", "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        scores: Dict[str, Score] = row["scores"]
        for kind in [*kinds, "healthy", "all"]:
            s = scores.get(kind)
            if s is None:
                continue
            lines.append(f"| {row['method']} | {row['continuity']} | {kind} | {s.faults} | "
                         f"{s.detected} | {s.detections} | {number(s.precision)} | "
                         f"{number(s.recall)} | {number(s.f1)} | {number(s.mean_alert_s, 1)} |")
    return lines


def targets(rows: List[Dict], healthy_s: float) -> List[str]:
    lines = ["| method | continuity | precision >= 0.95 | F1 >= 0.93 | every alert <= 10 s | "
             f"no alert in {healthy_s:.0f} s healthy |", "|---|---|---|---|---|---|"]
    for row in rows:
        s: Score = row["scores"]["all"]
        slowest = max(s.alert_s) if s.alert_s else None
        lines.append(
            f"| {row['method']} | {row['continuity']} | {number(s.precision)} "
            f"{mark((s.precision or 0) >= PRECISION_TARGET)} | {number(s.f1)} "
            f"{mark((s.f1 or 0) >= F1_TARGET)} | max {number(slowest, 1)} "
            f"{mark(bool(s.alert_s) and slowest <= ALERT_TARGET_S)} | "
            f"{len(row['healthy'])} {mark(not row['healthy'])} |")
    return lines


def signatures(run: Run) -> List[str]:
    """What each fault looks like in the metrics: per fault, the metrics on which the faulty
    machine's median over the fault (its first 5 s left out) is off its peers' by > 25 %."""
    samples: Dict[tuple, List[float]] = {}
    with open(run.metrics) as source:
        next(source)
        for line in source:
            time_s, machine, metric, value = line.rstrip("\n").split(",")
            samples.setdefault((machine, metric), []).append((float(time_s), float(value)))
    lines = ["| fault | metric | faulty machine | peers (median of medians) | ratio |",
             "|---|---|---:|---:|---:|"]
    for label in run.labels:
        found = []
        for (machine, metric), series in samples.items():
            if machine != label["machine"]:
                continue
            during = [(m, statistics.median(v for t, v in points
                                            if label["start"] + 5 <= t <= label["end"]))
                      for (m, name), points in samples.items() if name == metric
                      and any(label["start"] + 5 <= t <= label["end"] for t, _ in points)]
            mine = [value for m, value in during if m == machine]
            peers = [value for m, value in during if m != machine]
            if not mine or not peers:
                continue
            peer = statistics.median(peers)
            ratio = mine[0] / peer if peer else float("inf") if mine[0] else 1.0
            if abs(ratio - 1) > 0.25:
                found.append((metric, mine[0], peer, ratio))
        for metric, mine, peer, ratio in sorted(found) or [("(none)", None, None, None)]:
            lines.append(f"| {label['kind']} on {label['machine']} | {metric} | "
                         f"{_short(mine)} | {_short(peer)} | {_short(ratio)} |")
    return lines


def _short(value: Optional[float]) -> str:
    if value is None:
        return "-"
    return f"{value:.3g}" if abs(value) < 1e4 else f"{value:.2e}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=str(REPO / "build" / "release"))
    parser.add_argument("--python", default="/usr/bin/python3")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--keep", help="run directories here (kept), not in a temporary one")
    parser.add_argument("--rescore", help="score the runs an earlier --keep left here again")
    parser.add_argument("--json", help="write the rows (scores, detections) here")
    args = parser.parse_args()
    upguard = str(Path(args.build).resolve() / "upguard")
    keep = args.keep or args.rescore
    work = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="machines-eval-"))
    work.mkdir(parents=True, exist_ok=True)
    scenario = QUICK if args.quick else FULL
    if args.rescore and (work / QUICK.name).is_dir() and not (work / FULL.name).is_dir():
        scenario = QUICK
    healthy_s = 60.0 if scenario is QUICK else 180.0

    def scenario_run(which, name: str) -> Run:
        """A kept run (--rescore, or one --keep finished before) is scored again, not rerun."""
        if args.rescore or (keep and (work / name / "scenario.json").exists()):
            return load_run(which, work / name)
        shutil.rmtree(work / name, ignore_errors=True)
        return run_scenario(which, upguard, work / name, args.python)
    started = time.time()
    try:
        faulty = scenario_run(scenario, scenario.name)
        clean = scenario_run(healthy(healthy_s), "healthy")
        model = None
        if "minder" in methods(upguard):
            # Fitted on healthy history the evaluation never scores: a run of its own (full),
            # or the fault run's warm-up (quick).
            if scenario is QUICK:
                history = warmup_csv(faulty, work / "fit.csv")
            else:
                history = scenario_run(healthy(150.0), "fit").metrics
            model = work / "minder.model"
            why_not = fit(upguard, history, model)
            if why_not:
                print(f"Minder not evaluated: {why_not}\n")
                model = None
        rows = evaluate(upguard, faulty, clean, model)
        shapes = signatures(faulty)  # reads the metrics, which go with a temporary `work`
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    kinds = list(dict.fromkeys(label["kind"] for label in faulty.labels))
    where = ", ".join(f"{label['kind']} on {label['machine']}" for label in faulty.labels)
    print(f"One training run, {scenario.machines} machines (the DDP GPT 2x64, one rank each), "
          f"faults of {scenario.fault_s:.0f} s with {scenario.gap_s:.0f} s of recovery after "
          f"each: {where}; a healthy run of {healthy_s:.0f} s; metrics from the agents at 1 s. "
          f"A detection is a true positive when it names the fault's machine, overlaps the "
          f"fault's interval plus {GRACE_S:.0f} s of grace and was raised after it began "
          f"(one sample's leeway). "
          f"Wall time {time.time() - started:.0f} s.\n")
    print("\n".join(table(rows, kinds)))
    print()
    print("\n".join(targets(rows, healthy_s)))
    print("\nWhat each fault looks like: the metrics on which the faulty machine's median over "
          "the fault (after its first 5 s) is more than 25 % off its peers'.\n")
    print("\n".join(shapes))
    if args.json:
        Path(args.json).write_text(json.dumps(
            [{**row, "scores": {kind: vars(s) for kind, s in row["scores"].items()}}
             for row in rows], indent=1))


if __name__ == "__main__":
    main()

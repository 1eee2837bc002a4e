"""PyTorch Flight Recorder dumps, analyzed as `upguard watch` analyzes its own rings: the rank
that hangs a collective, a size or dtype mismatch, a straggler.

    python3 -m upguard.flight_recorder /tmp/fr/rank_0 /tmp/fr/rank_1 -o runs/fr [--json]
    python3 -m upguard.flight_recorder /tmp/fr -o runs/fr        # every dump in the folder

Each rank's dump (_fr_dump.py reads it) becomes a watch ring, DIR/watch/rank<R>.ring
(docs/formats/watch-ring.md, _ring_file.py writes it): process group -> ring group (name,
backend, members), collective_seq_id -> seq, profiling_name -> op, the inputs -> dtype, count
and bytes, time_created / started / completed -> issued / started / completed, the innermost
frame outside torch -> call site, the dump's time -> the ring's last heartbeat. Then it runs
`upguard watch --analyze DIR` and passes its report and exit code through (0 no findings, 1
findings, 2 an error).

What a dump does not hold is not made up: a rank without a dump has no ring (the report names
it `no_ring`); a rank's steps, compute ops and Python stack are not in a dump, so its ring has
none; send/recv are left out (the ring matches collectives by group and sequence number)."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from upguard import _fr_dump as fr
from upguard import _ring_file as ring_file

PREFIX = "upguard flight-recorder: "


@dataclass
class Conversion:
    rings: Dict[int, ring_file.RingFile]
    world_size: int
    missing: List[int]  # members of a group that left no dump
    notes: List[str] = field(default_factory=list)


def _is_library(filename: str) -> bool:
    """Frames of torch itself, of Python's standard library and of runpy-style wrappers."""
    if filename.startswith("<"):
        return True
    for packages in ("/site-packages/", "/dist-packages/"):
        if packages + "torch/" in filename:
            return True
    return "/lib/python3" in filename and "-packages/" not in filename


def call_site(frames: Any, cwd: str) -> str:
    """The innermost frame outside torch and the standard library, as `file:line` (relative to
    `cwd` when under it): the Python line that issued the collective."""
    for frame in frames or []:
        filename = str(frame.get("filename", ""))
        if _is_library(filename):
            continue
        if filename.startswith(cwd + os.sep):
            filename = filename[len(cwd) + 1:]
        return f"{filename}:{frame.get('line', 0)}"
    return ""


def _inputs(entry: Dict[str, Any]) -> Tuple[str, int, int]:
    """(dtype, elements, bytes) of the inputs: all of them for list forms, the first's dtype."""
    count = 0
    for sizes in entry.get("input_sizes") or []:
        numel = 1
        for dim in sizes:
            numel *= int(dim)
        count += numel
    dtypes = entry.get("input_dtypes") or []
    if not dtypes:
        return "", count, 0
    name, itemsize = fr.DTYPES.get(str(dtypes[0]), (str(dtypes[0]), 0))
    return name, count, count * itemsize


def _slot(dump: fr.Dump, idx: int, entry: Dict[str, Any], cwd: str) -> ring_file.RingSlot:
    """One collective of a dump as a ring slot (its group index is set by the caller).

    Completion: NCCL (and XCCL) entries read "completed" when their end event is seen; one that
    is retired without it timed out, and is still in flight as far as the job goes. Gloo's
    recorder has no events: its entries stay "scheduled" and are retired when the work ends,
    at a time the dump does not say (the issue time stands in, so transfers read as 0 ms)."""
    profiling = str(fr.field(dump, idx, entry, "profiling_name"))
    issued = int(fr.field(dump, idx, entry, "time_created_ns"))
    state_name = str(fr.field(dump, idx, entry, "state"))
    started = fr.optional_ns(entry, "time_discovered_started_ns")
    completed = fr.optional_ns(entry, "time_discovered_completed_ns")
    events = fr.backend_of(profiling) in ("nccl", "xccl") or started or completed
    if state_name == "completed":
        state, completed = ring_file.COMPLETED, completed or issued
    elif entry.get("retired") and not events:
        state = ring_file.COMPLETED
        duration_ms = entry.get("duration_ms")
        completed = issued + (int(float(duration_ms) * 1e6) if duration_ms else 0)
    elif state_name in ("started", "scheduled"):
        state, completed = (ring_file.STARTED if started else ring_file.ISSUED), 0
    else:
        raise fr.DumpError(f"{dump.path}: entry {idx} has state {state_name!r} (dump version "
                           f"{dump.version}); this reader knows scheduled, started, completed")
    dtype, count, nbytes = _inputs(entry)
    return ring_file.RingSlot(
        group=-1, state=state, seq=int(fr.field(dump, idx, entry, "collective_seq_id",
                                                "seq_id")),
        issued_ns=issued, started_ns=started, completed_ns=completed, count=count,
        bytes=nbytes, op=fr.op_name(profiling), dtype=dtype,
        call_site=call_site(entry.get("frames"), cwd))


def _merge(slots: List[ring_file.RingSlot]) -> ring_file.RingSlot:
    """The entries of one coalesced collective (one sequence number, several ops) as one slot."""
    if len(slots) == 1:
        return slots[0]
    first = slots[0]
    ops = {s.op for s in slots if s.op != "coalesced"}
    dtypes = {s.dtype for s in slots if s.dtype}
    done = all(s.state == ring_file.COMPLETED for s in slots)
    return ring_file.RingSlot(
        group=first.group, state=min(s.state for s in slots), seq=first.seq,
        issued_ns=min(s.issued_ns for s in slots), started_ns=first.started_ns,
        completed_ns=max(s.completed_ns for s in slots) if done else 0,
        count=sum(s.count for s in slots), bytes=sum(s.bytes for s in slots),
        op=ops.pop() if len(ops) == 1 else "coalesced",
        dtype=dtypes.pop() if len(dtypes) == 1 else ("mixed" if dtypes else ""),
        call_site=first.call_site)


def _world_size(dumps: Sequence[fr.Dump], given: int) -> int:
    world = max([given] + [d.rank + 1 for d in dumps])
    for dump in dumps:
        for config in dump.pg_config.values():
            ranks = fr.members(config)
            if ranks:
                world = max(world, max(ranks) + 1, len(ranks))
    return world


def _members(dumps: Sequence[fr.Dump], name: str, desc: str, world: int,
             notes: List[str]) -> List[int]:
    """A group's global ranks: its pg_config entry (NCCL names them), the whole world for the
    default group, else the ranks whose dumps show it (gloo's pg_config names no group)."""
    for dump in dumps:
        ranks = fr.members(dump.pg_config.get(name)) if name else None
        if ranks:
            return ranks
    if name == "0" or desc == "default_pg":
        return list(range(world))
    seen = sorted({d.rank for d in dumps for e in d.entries
                   if str((e.get("process_group") or ["", ""])[0]) == name})
    notes.append(f"group {name} ({desc}): no dump lists its members; taken as the ranks whose "
                 f"dumps show it ({', '.join(map(str, seen))}), so a member that issued nothing "
                 "in it is not seen")
    return seen


def convert(dumps: Sequence[fr.Dump], world_size: int = 0, dump_time_ns: int = 0,
            cwd: Optional[str] = None) -> Conversion:
    cwd = cwd or os.getcwd()
    world = _world_size(dumps, world_size)
    conversion = Conversion({}, world, [])
    groups: Dict[str, List[int]] = {}
    p2p = 0
    for dump in dumps:
        by_key: Dict[Tuple[str, int], List[ring_file.RingSlot]] = {}
        ring_groups: Dict[str, ring_file.RingGroup] = {}
        pg_ids: Dict[str, str] = {}
        latest = 0
        for idx, entry in enumerate(dump.entries):
            if not isinstance(entry, dict):
                raise fr.DumpError(f"{dump.path}: entry {idx} is a {type(entry).__name__}, not "
                                   f"a dict (dump version {dump.version})")
            slot = _slot(dump, idx, entry, cwd)
            latest = max(latest, slot.issued_ns, slot.started_ns, slot.completed_ns)
            if entry.get("is_p2p") or slot.op in ("send", "recv", "recvanysource"):
                p2p += 1
                continue
            pg = entry.get("process_group") or [str(entry.get("pg_id", "")), ""]
            name, desc = str(pg[0]), str(pg[1]) if len(pg) > 1 else ""
            if name not in groups:
                groups[name] = _members(dumps, name, desc, world, conversion.notes)
            if name not in ring_groups:
                members = groups[name]
                ring_groups[name] = ring_file.RingGroup(
                    name, fr.backend_of(str(entry["profiling_name"])), members,
                    members.index(dump.rank) if dump.rank in members else -1)
                pg_ids[name] = str(entry.get("pg_id", ""))
            by_key.setdefault((name, slot.seq), []).append(slot)
        heartbeat = dump_time_ns or max(dump.mtime_ns, latest)
        ring = ring_file.RingFile(rank=dump.rank, world_size=world,
                                  start_ns=min([heartbeat] + [s[0].issued_ns
                                                              for s in by_key.values()]),
                                  heartbeat_ns=heartbeat, last_op_ns=latest or heartbeat)
        ring.groups = list(ring_groups.values())
        index = {group.name: idx for idx, group in enumerate(ring.groups)}
        for (name, _seq), slots in by_key.items():
            slot = _merge(slots)
            slot.group = index[name]
            ring.slots.append(slot)
        ring.slots.sort(key=lambda s: s.issued_ns)
        for group in ring.groups:
            status = dump.pg_status.get(pg_ids[group.name]) or {}
            mine = [s for s in ring.slots if ring.groups[s.group] is group]
            group.issued_seq = max([s.seq for s in mine] +
                                   [int(status.get("last_enqueued_collective", 0))])
            group.completed_seq = max([s.seq for s in mine if s.state == ring_file.COMPLETED] +
                                      [int(status.get("last_completed_collective", 0))])
        conversion.rings[dump.rank] = ring
    expected = sorted({rank for members in groups.values() for rank in members})
    conversion.missing = [rank for rank in expected if rank not in conversion.rings]
    if p2p:
        conversion.notes.append(f"{p2p} send/recv entries left out (only collectives are "
                                "matched across ranks)")
    return conversion


def read_dumps(paths: Iterable[str]) -> List[fr.Dump]:
    """The dumps named, a folder standing for every file in it whose name ends in a rank."""
    files: List[str] = []
    for path in paths:
        if os.path.isdir(path):
            names = sorted(os.listdir(path))
            files += [os.path.join(path, n) for n in names
                      if os.path.isfile(os.path.join(path, n)) and fr._RANK_AT_END.search(n)]
        else:
            files.append(path)
    if not files:
        raise fr.DumpError("no Flight Recorder dumps among " + " ".join(paths))
    dumps: Dict[int, fr.Dump] = {}
    for path in files:
        dump = fr.read(path)
        if dump.rank in dumps:
            raise fr.DumpError(f"two dumps of rank {dump.rank}: {dumps[dump.rank].path} and "
                               f"{path}; give one")
        dumps[dump.rank] = dump
    return [dumps[rank] for rank in sorted(dumps)]


def write_rings(conversion: Conversion, out: str, overwrite: bool) -> None:
    watch = os.path.join(out, "watch")
    old = [n for n in os.listdir(watch) if n.endswith(".ring")] if os.path.isdir(watch) else []
    if old and not overwrite:
        raise fr.DumpError(f"{watch} holds the rings of an earlier run ({len(old)}); "
                           "give another -o or --overwrite")
    os.makedirs(watch, exist_ok=True)
    for name in old:
        os.remove(os.path.join(watch, name))
    for rank, ring in conversion.rings.items():
        ring_file.write(ring, os.path.join(watch, f"rank{rank}.ring"))


def find_upguard(explicit: Optional[str]) -> str:
    """--upguard, else `upguard` on PATH, else the build this package was copied into
    (BUILD/python/upguard -> BUILD/upguard), else the release build of this source checkout."""
    if explicit:
        return explicit
    on_path = shutil.which("upguard")
    if on_path:
        return on_path
    above = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for built in (os.path.join(above, "upguard"),
                  os.path.join(above, "build", "release", "upguard")):
        if os.path.isfile(built) and os.access(built, os.X_OK):
            return built
    raise fr.DumpError("cannot find the upguard CLI: pass --upguard PATH (make build puts it "
                       "in build/release/upguard), or -n to convert only")


def _parse(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python3 -m upguard.flight_recorder",
        description="Analyze PyTorch Flight Recorder dumps (one per rank) with upguard watch.")
    parser.add_argument("dumps", nargs="+", help="dump files <prefix><rank>, or folders of them")
    parser.add_argument("-o", "--out", required=True, help="run folder: rings go to OUT/watch")
    parser.add_argument("--overwrite", action="store_true", help="replace OUT/watch's rings")
    parser.add_argument("--json", action="store_true", help="the report as JSON (upguard.watch/1)")
    parser.add_argument("--upguard", help="the upguard CLI (default: on PATH, else the build)")
    parser.add_argument("--world-size", type=int, default=0,
                        help="ranks in the job, when the dumps cannot tell (gloo's do not)")
    parser.add_argument("--dump-time", type=float, default=0,
                        help="when the dumps were taken, seconds since the epoch (default: "
                             "each file's modification time)")
    parser.add_argument("--stall-floor", help="passed to upguard watch")
    parser.add_argument("-n", "--convert-only", action="store_true",
                        help="write the rings, do not analyze")
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parse(argv)
    try:
        dumps = read_dumps(args.dumps)
        conversion = convert(dumps, args.world_size, int(args.dump_time * 1e9))
        write_rings(conversion, args.out, args.overwrite)
        upguard = None if args.convert_only else find_upguard(args.upguard)
    except (fr.DumpError, OSError, ValueError) as error:
        print(PREFIX + str(error), file=sys.stderr)
        return 2
    say = lambda text: print(PREFIX + text, file=sys.stderr)  # noqa: E731
    say(f"{len(dumps)} dump{'s' if len(dumps) != 1 else ''} (version "
        f"{', '.join(sorted({d.version for d in dumps}))}) of {conversion.world_size} ranks "
        f"-> {os.path.join(args.out, 'watch')}")
    for rank in conversion.missing:
        say(f"rank {rank} left no dump among these: it has no record (the report says no_ring)")
    for note in conversion.notes:
        say(note)
    say("a dump holds collectives only: 'step 0', no last op and no stack in the report mean "
        "unknown; cause 'python' means the rank issued no later collective")
    if upguard is None:
        return 0
    command = [upguard, "watch", "--analyze", args.out] + (["--json"] if args.json else [])
    if args.stall_floor:
        command += ["--stall-floor", args.stall_floor]
    sys.stdout.flush()
    return subprocess.run(command).returncode


if __name__ == "__main__":
    sys.exit(main())

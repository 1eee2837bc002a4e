"""Reading PyTorch Flight Recorder dumps: one file per rank, a pickled dict (or the same dict in
JSON) as torch's FlightRecorder writes it (torch/csrc/distributed/c10d/FlightRecorder.hpp):

    {"version": "2.10", "pg_config": {name: {"name", "desc", "ranks": "[0, 1]"}},
     "pg_status": {pg_id: {"last_enqueued_collective", "last_started_collective",
                           "last_completed_collective"}},
     "entries": [{"record_id", "pg_id", "process_group": (name, desc), "collective_seq_id",
                  "p2p_seq_id", "op_id", "profiling_name": "gloo:all_reduce",
                  "time_created_ns", "input_sizes", "input_dtypes", "output_sizes",
                  "output_dtypes", "state": "scheduled" | "started" | "completed",
                  "time_discovered_started_ns", "time_discovered_completed_ns",
                  "retired", "timeout_ms", "is_p2p", "frames": [{"name", "filename", "line"}],
                  "duration_ms" (with timing on), "thread_id", "thread_name"}, ...]}

The dump does not hold the rank: torch names the file <prefix><rank> (TORCH_FR_DUMP_TEMP_FILE,
TORCH_NCCL_DEBUG_INFO_TEMP_FILE), and so does this reader. Times are CLOCK_REALTIME ns.

Major version 2 is read (torch 2.15 writes "2.10"); a field this reader needs and the dump
lacks is an error that names the file, the entry and the version. Pickles are read with a
loader that refuses every class: a dump holds plain values only, and a pickle that names a
class is not one (and could run code if it were loaded)."""

from __future__ import annotations

import ast
import io
import json
import os
import pickle
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

KNOWN_MAJOR = 2


class DumpError(ValueError):
    """A dump that cannot be read, with the file and the reason."""


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"it names the class {module}.{name}")


@dataclass
class Dump:
    path: str
    rank: int
    version: str
    entries: List[Dict[str, Any]]
    pg_config: Dict[str, Dict[str, Any]]
    pg_status: Dict[str, Dict[str, Any]]
    mtime_ns: int


_RANK_AT_END = re.compile(r"(\d+)(\.(json|pkl|pickle))?$")


def rank_of(path: str) -> int:
    found = _RANK_AT_END.search(os.path.basename(path))
    if found is None:
        raise DumpError(f"{path}: no rank at the end of the file name (torch names a dump "
                        f"<prefix><rank>, e.g. nccl_trace_rank_0); rename it so")
    return int(found.group(1))


def _decode(path: str, raw: bytes) -> Dict[str, Any]:
    if raw[:1] == b"\x80":
        try:
            value = _PlainUnpickler(io.BytesIO(raw)).load()
        except Exception as error:  # any malformed pickle: say which file and why
            raise DumpError(f"{path}: not a Flight Recorder dump ({error})") from None
    elif raw.lstrip()[:1] == b"{":
        try:
            value = json.loads(raw)
        except ValueError as error:
            raise DumpError(f"{path}: not a Flight Recorder JSON dump ({error})") from None
    else:
        raise DumpError(f"{path}: neither a pickle nor JSON (starts with {raw[:8]!r}); "
                        "expected a Flight Recorder dump")
    if not isinstance(value, dict):
        raise DumpError(f"{path}: holds a {type(value).__name__}, not a Flight Recorder dict")
    return value


def read(path: str) -> Dump:
    with open(path, "rb") as infile:
        raw = infile.read()
    value = _decode(path, raw)
    if "version" not in value:
        raise DumpError(f"{path}: no 'version' field (keys: {sorted(map(str, value))}); "
                        "not a Flight Recorder dump")
    version = str(value["version"])
    major = version.split(".")[0]
    if not major.isdigit() or int(major) != KNOWN_MAJOR:
        raise DumpError(f"{path}: Flight Recorder dump version {version!r}; this reader "
                        f"understands major version {KNOWN_MAJOR} (torch 2.15 writes 2.10)")
    entries = value.get("entries", [])  # a JSON dump leaves it out when empty
    if not isinstance(entries, list):
        raise DumpError(f"{path}: 'entries' is a {type(entries).__name__}, not a list "
                        f"(dump version {version})")
    return Dump(path, rank_of(path), version, entries, dict(value.get("pg_config") or {}),
                dict(value.get("pg_status") or {}), os.stat(path).st_mtime_ns)


def field(dump: Dump, idx: int, entry: Dict[str, Any], *names: str) -> Any:
    """The first of `names` the entry has (later names: what older dumps called it)."""
    for name in names:
        if name in entry:
            return entry[name]
    raise DumpError(f"{dump.path}: entry {idx} has no field {names[0]!r} (dump version "
                    f"{dump.version}); this reader needs it")


def optional_ns(entry: Dict[str, Any], name: str) -> int:
    """A time that may be absent: None in a pickle, 0 in JSON, missing in older dumps."""
    value = entry.get(name)
    return int(value) if value else 0


def members(config: Any) -> Optional[List[int]]:
    """The global ranks of a pg_config entry ("[0, 1]", or a list), None when unreadable."""
    ranks = config.get("ranks") if isinstance(config, dict) else None
    if isinstance(ranks, str):
        try:
            ranks = ast.literal_eval(ranks)
        except (ValueError, SyntaxError):
            return None
    if isinstance(ranks, (list, tuple)) and all(isinstance(r, int) for r in ranks):
        return list(ranks)
    return None


# Elements' sizes of torch's dtype names as the dump spells them (c10::toString(ScalarType)),
# and the names the watch ring uses (python/src/watch_feed.cc DtypeName).
DTYPES = {
    "Float": ("float32", 4), "Double": ("float64", 8), "Half": ("float16", 2),
    "BFloat16": ("bfloat16", 2), "Long": ("int64", 8), "Int": ("int32", 4),
    "Short": ("int16", 2), "Char": ("int8", 1), "Byte": ("uint8", 1), "Bool": ("bool", 1),
    "ComplexFloat": ("ComplexFloat", 8), "ComplexDouble": ("ComplexDouble", 16),
    "ComplexHalf": ("ComplexHalf", 4), "Float8_e4m3fn": ("Float8_e4m3fn", 1),
    "Float8_e5m2": ("Float8_e5m2", 1), "UInt16": ("UInt16", 2), "UInt32": ("UInt32", 4),
    "UInt64": ("UInt64", 8),
}

# Flight Recorder op names that differ from the c10d op the watch names (after the adapter's
# rule: the text after the backend's "name:" with underscores removed; CollectiveKind in
# python/src/collectives.cc).
_OP_ALIASES = {
    "allreducebarrier": "barrier",  # NCCL's barrier is an all-reduce of one element
    "broadcastoop": "broadcast",
    "reduceoop": "reduce",
    "sparseallreduce": "allreduce",
}


def op_name(profiling_name: str) -> str:
    """"gloo:all_reduce" -> "allreduce", "nccl:_all_gather_base" -> "allgatherbase",
    "nccl:send 0->1" -> "send": the names the C++ adapter writes into the ring."""
    name = profiling_name.split(":", 1)[-1].split(" ", 1)[0]
    kind = name.replace("_", "").lower()
    return _OP_ALIASES.get(kind, kind)


def backend_of(profiling_name: str) -> str:
    return profiling_name.split(":", 1)[0] if ":" in profiling_name else ""

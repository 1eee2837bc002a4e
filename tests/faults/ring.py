"""A second reader of the watch ring (docs/formats/watch-ring.md), in Python from the spec alone:
the fault-injection cases read when a rank's fault began (its last step's end, the slot of a
mismatched collective) from it, and the tests compare it with what the C++ reader reports."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import List


@dataclass
class Slot:
    entry: int
    group: int
    state: int
    seq: int
    step: int
    issued_ns: int
    completed_ns: int
    count: int
    op: str
    dtype: str
    call_site: str


@dataclass
class Group:
    name: str
    backend: str
    size: int
    members: List[int]


@dataclass
class Ring:
    rank: int
    pid: int
    start_realtime_ns: int
    start_monotonic_ns: int
    closed: bool
    step: int = 0  # steps finished
    step_ends: List[int] = field(default_factory=list)  # CLOCK_MONOTONIC, oldest first
    slots: List[Slot] = field(default_factory=list)
    groups: List[Group] = field(default_factory=list)
    stack_request: int = 0  # the monitor's last request for the Python stacks
    stack_answered: int = 0  # the request `stack` answers
    stack: str = ""

    def realtime(self, monotonic_ns: int) -> float:
        """Seconds since the epoch of a CLOCK_MONOTONIC time of this rank."""
        return (self.start_realtime_ns + monotonic_ns - self.start_monotonic_ns) / 1e9


def _text(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


def read(path: str) -> Ring:
    data = open(path, "rb").read()
    if data[:8] != b"UGWRING\0":
        raise ValueError(f"{path}: not a watch ring")
    version, _order, _hsize, slot_size, slot_count = struct.unpack_from("<IIIII", data, 8)
    if version != 1:
        raise ValueError(f"{path}: ring version {version}, this reader knows 1")
    activity, groups_at, stack_at, slots_at = struct.unpack_from("<QQQQ", data, 32)
    rank, _world, _local, pid = struct.unpack_from("<iiii", data, 64)
    start_real, start_mono, _beat, entries = struct.unpack_from("<QQQQ", data, 80)
    closed = struct.unpack_from("<I", data, 116)[0] != 0
    ring = Ring(rank, pid, start_real, start_mono, closed)
    for group_idx in range(struct.unpack_from("<I", data, 112)[0]):
        at = groups_at + 256 * group_idx
        size, stored = struct.unpack_from("<I", data, at + 64)[0], \
            struct.unpack_from("<I", data, at + 88)[0]
        ring.groups.append(Group(_text(data[at:at + 48]), _text(data[at + 48:at + 64]), size,
                                 list(struct.unpack_from(f"<{stored}i", data, at + 96))))
    ring.stack_request, ring.stack_answered = struct.unpack_from("<QQ", data, stack_at)
    ring.stack = _text(data[stack_at + 32:stack_at + 8192])
    ring.step = struct.unpack_from("<q", data, activity + 8)[0]
    recorded = struct.unpack_from("<Q", data, activity + 40)[0]
    ends = struct.unpack_from("<32Q", data, activity + 112)
    ring.step_ends = [ends[n % 32] for n in range(max(0, recorded - 32), recorded)]
    for entry in range(max(0, entries - slot_count), entries):
        at = slots_at + slot_size * (entry % slot_count)
        tag, group, state, seq, step, issued, _started, completed, count = \
            struct.unpack_from("<QIIQqQQQQ", data, at)
        if tag != entry + 1:
            continue  # overwritten or being written
        ring.slots.append(Slot(entry, group, state, seq, step, issued, completed, count,
                               _text(data[at + 72:at + 96]), _text(data[at + 96:at + 112]),
                               _text(data[at + 112:at + 240])))
    return ring

"""A writer of whole watch ring files (docs/formats/watch-ring.md, version 1), from the spec
alone, for rings made after the fact: the Flight Recorder converter (flight_recorder.py) writes
one per rank and `upguard watch --analyze` reads them as it reads the rings of a watched run.

A live rank's ring is written by the C++ writer (src/watch/ring_writer.cc) while it runs; this
writer makes a finished one in one go, so it needs none of the spec's sequence words beyond
their settled values (even `sequence`, `entry` = n + 1).

    ring = RingFile(rank=0, world_size=2, start_ns=t0, heartbeat_ns=t1)
    ring.groups.append(RingGroup("0", "gloo", members=[0, 1], rank_in_group=0, issued_seq=9))
    ring.slots.append(RingSlot(group=0, state=ISSUED, seq=9, issued_ns=t, op="allreduce", ...))
    write(ring, "DIR/watch/rank0.ring")
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from typing import List

# Slot states (§6); serialized, never renumbered.
ISSUED, STARTED, COMPLETED, FAILED = 1, 2, 3, 4

MAGIC = b"UGWRING\0"
VERSION = 1
BYTE_ORDER = 0x01020304
HEADER_SIZE = 256
ACTIVITY_SIZE = 512
GROUP_SIZE = 256
GROUP_CAPACITY = 32
MEMBERS_STORED = 40
STACK_SIZE = 8192
SLOT_SIZE = 256
MIN_SLOTS = 64

ACTIVITY_OFFSET = HEADER_SIZE
GROUPS_OFFSET = ACTIVITY_OFFSET + ACTIVITY_SIZE
STACK_OFFSET = GROUPS_OFFSET + GROUP_SIZE * GROUP_CAPACITY
SLOTS_OFFSET = STACK_OFFSET + STACK_SIZE


@dataclass
class RingGroup:
    name: str
    backend: str
    members: List[int]  # global ranks in group order
    rank_in_group: int = -1
    issued_seq: int = 0
    completed_seq: int = 0


@dataclass
class RingSlot:
    group: int  # index into RingFile.groups
    state: int
    seq: int
    issued_ns: int
    started_ns: int = 0
    completed_ns: int = 0
    count: int = 0
    bytes: int = 0
    op: str = ""
    dtype: str = ""
    call_site: str = ""
    step: int = 0
    root: int = -1


@dataclass
class RingFile:
    """One rank's ring. Times are nanoseconds of one clock; `start_ns` is stored as both
    `start_realtime_ns` and `start_monotonic_ns`, so a ring made from CLOCK_REALTIME times (as
    the Flight Recorder's) reads back on CLOCK_REALTIME unchanged."""

    rank: int
    world_size: int
    start_ns: int
    heartbeat_ns: int
    closed: bool = True
    pid: int = 0
    local_rank: int = -1
    hostname: str = ""
    step: int = 0
    ops: int = 0
    last_op: str = ""
    last_op_ns: int = 0
    groups: List[RingGroup] = field(default_factory=list)
    slots: List[RingSlot] = field(default_factory=list)


def _text(value: str, size: int) -> bytes:
    """char[size]: UTF-8, NUL-padded, cut at size - 1 bytes (never inside a character)."""
    raw = value.encode("utf-8")[:size - 1].decode("utf-8", "ignore").encode("utf-8")
    return raw.ljust(size, b"\0")


def slot_count_for(entries: int) -> int:
    """The power of two the ring needs to hold `entries` slots (at least MIN_SLOTS)."""
    count = MIN_SLOTS
    while count < entries:
        count *= 2
    return count


def encode(ring: RingFile) -> bytes:
    if len(ring.groups) > GROUP_CAPACITY:
        raise ValueError(f"rank {ring.rank}: {len(ring.groups)} groups; a ring holds "
                         f"{GROUP_CAPACITY}")
    slot_count = slot_count_for(len(ring.slots))
    data = bytearray(SLOTS_OFFSET + SLOT_SIZE * slot_count)
    # §3 header ("=": the host's byte order, standard sizes, no padding).
    struct.pack_into("=8sIIIIII", data, 0, MAGIC, VERSION, BYTE_ORDER, HEADER_SIZE, SLOT_SIZE,
                     slot_count, GROUP_CAPACITY)
    struct.pack_into("=QQQQ", data, 32, ACTIVITY_OFFSET, GROUPS_OFFSET, STACK_OFFSET,
                     SLOTS_OFFSET)
    struct.pack_into("=iiii", data, 64, ring.rank, ring.world_size, ring.local_rank, ring.pid)
    struct.pack_into("=QQQQII", data, 80, ring.start_ns, ring.start_ns, ring.heartbeat_ns,
                     len(ring.slots), len(ring.groups), 1 if ring.closed else 0)
    data[152:216] = _text(ring.hostname, 64)
    # §4 activity: settled (an even sequence word); no step ends recorded.
    struct.pack_into("=QqQQQQ", data, ACTIVITY_OFFSET, 2, ring.step, ring.ops, ring.last_op_ns,
                     0, 0)
    data[ACTIVITY_OFFSET + 48:ACTIVITY_OFFSET + 112] = _text(ring.last_op, 64)
    # §5 groups.
    for idx, group in enumerate(ring.groups):
        at = GROUPS_OFFSET + GROUP_SIZE * idx
        data[at:at + 48] = _text(group.name, 48)
        data[at + 48:at + 64] = _text(group.backend, 16)
        stored = group.members[:MEMBERS_STORED]
        struct.pack_into("=IiQQI", data, at + 64, len(group.members), group.rank_in_group,
                         group.issued_seq, group.completed_seq, len(stored))
        struct.pack_into(f"={len(stored)}i", data, at + 96, *stored)
    # §6 slots: entry n in slot n % slot_count (every entry fits: slot_count >= entries).
    for entry, slot in enumerate(ring.slots):
        if not 0 <= slot.group < len(ring.groups):
            raise ValueError(f"rank {ring.rank}: slot {entry} names group {slot.group}")
        at = SLOTS_OFFSET + SLOT_SIZE * (entry % slot_count)
        struct.pack_into("=QIIQqQQQQQ", data, at, entry + 1, slot.group, slot.state, slot.seq,
                         slot.step, slot.issued_ns, slot.started_ns, slot.completed_ns,
                         slot.count, slot.bytes)
        data[at + 72:at + 96] = _text(slot.op, 24)
        data[at + 96:at + 112] = _text(slot.dtype, 16)
        data[at + 112:at + 240] = _text(slot.call_site, 128)
        struct.pack_into("=i", data, at + 240, slot.root)
    return bytes(data)


def write(ring: RingFile, path: str) -> None:
    """Writes the ring under a temporary name and renames it into place (§1): a reader never
    sees half a file."""
    temporary = f"{path}.tmp{os.getpid()}"
    with open(temporary, "wb") as out:
        out.write(encode(ring))
    os.replace(temporary, path)

"""The process groups torch.distributed knows in this process, for the recorder's collective
records (which group a collective ran in, and its member ranks) and for the run metadata."""

from __future__ import annotations

import sys
from typing import Any, Dict, List, Tuple

# Every group described so far, by name: the metadata still names them after the program
# destroyed its process groups (as training scripts do before they exit).
_seen: Dict[str, Dict[str, Any]] = {}


def _c10d() -> Any:
    # Never imported here: a program that did not import torch.distributed has no groups, and
    # importing it while recording (the metadata is gathered as recording stops) records the
    # ops its import runs.
    dist = sys.modules.get("torch.distributed")
    if dist is None or not (dist.is_available() and dist.is_initialized()):
        return None
    return dist.distributed_c10d


def describe() -> List[Tuple[Any, str, List[int], int, str]]:
    """(group object, name, global ranks in group-rank order, this rank's group rank, backend) per
    group this rank belongs to. Called by the compiled recorder when a collective names a group
    it has not seen."""
    try:
        c10d = _c10d()
        if c10d is None:
            return []
        described = []
        for group, ranks in list(c10d._pg_group_ranks.items()):
            if group is None or group is c10d.GroupMember.NON_GROUP_MEMBER:
                continue
            ordered = [g for g, _ in sorted(ranks.items(), key=lambda kv: kv[1])]
            name = str(c10d._pg_names.get(group, ""))
            backend = c10d._pg_map.get(group, ("",))[0]
            described.append((group, name, ordered, int(group.rank()), str(backend)))
            _seen[name] = {"name": name, "ranks": ordered, "backend": str(backend)}
        return described
    except Exception:  # never disturb the training
        return []


def process_groups() -> List[Dict[str, Any]]:
    """The groups as metadata: [{"name", "ranks", "backend"}], ordered by name."""
    describe()
    return [_seen[name] for name in sorted(_seen, key=lambda n: (len(n), n))]

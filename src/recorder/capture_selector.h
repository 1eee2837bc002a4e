// Which ops `upguard record --capture SELECTOR` dumps in full (docs/cli.md, "Targeted capture").
//
// A selector is comma-separated terms, all of which must hold:
//
//   step=2,index=1234          the op `upguard diff` / `upguard show` call step 2, #1234
//   op=aten::gelu,module=blocks.1.*
//   step=3,module=blocks.*.attn,phase=backward,limit=4
//   step=2,index=1234,stop     stop the program once the capture is written (diff --explain)
//   step=0,index=12|40|977     any of these ops (upguard calibrate's element comparison)
//   step=2,rank=1,position=9,stop  only rank 1 captures (and stops); the others record on
//   step=2,position=1180,stop  the op at position 1180 among step 2's ops outside the input
//                              pipeline (diff --explain: it stays put when DataLoader workers
//                              deliver batches at other times; input ops never match it)
//
// `index` is the op's position in its step in the trace (completion order, from 0): known only
// when the op ends, so an op whose other terms match keeps its inputs (copies of the ones it
// writes) from entry until then; `position` likewise. `limit` caps the ops captured (default:
// as many as the index or position list names, else 16).
//
//   ASSIGN_OR_RETURN(CaptureSelector sel, ParseCaptureSelector("step=2,op=aten::gelu"));
//   if (sel.MayMatch(step, "aten::gelu", module, phase)) ... keep inputs ...
//   if (sel.Matches(step, index, "aten::gelu", module, phase)) ... write the capture ...
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/records.h"
#include "upguard/status.h"

namespace upguard {

struct CaptureSelector {
  std::optional<int64_t> step;
  std::optional<int64_t> rank;      // only this rank captures; the adapter's other ranks, nothing
  std::vector<uint64_t> indices;    // sorted; empty = any
  std::vector<uint64_t> positions;  // sorted; empty = any (RecordedOp::position)
  std::string op;                   // glob; empty = any
  std::string module;               // glob; empty = any
  std::optional<Phase> phase;
  uint64_t limit = 16;
  bool stop = false;

  // Whether some index of `indices` lies in [first, first + span]; true without indices.
  bool IndexIn(uint64_t first, uint64_t span) const;
  // The same for `positions`.
  bool PositionIn(uint64_t first, uint64_t span) const;
  // Every term but `index` and `position` holds.
  bool MayMatch(int64_t op_step, std::string_view op_name, std::string_view op_module,
                Phase op_phase) const;
  // `op_position`: RecordedOp::position.
  bool Matches(int64_t op_step, uint64_t op_index, uint64_t op_position, std::string_view op_name,
               std::string_view op_module, Phase op_phase) const;
  // The canonical text ("step=2,index=1234,stop"), which parses back to the same selector.
  std::string ToString() const;
};

// Errors quote the term and list the accepted keys.
StatusOr<CaptureSelector> ParseCaptureSelector(std::string_view text);

// Where the capture of one op goes: RUN_DIR/captures/rank<R>.step<S>.op<I>.safetensors
// (docs/formats/capture.md §4.2).
std::string CapturePath(const std::string& run_dir, int rank, uint32_t step, uint64_t index);

}  // namespace upguard

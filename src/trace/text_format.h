// The text form of a trace (docs/formats/trace.md, Appendix A): what golden tests are written
// in and what `upguard_ugt_text` converts.
//
//   RETURN_IF_ERROR(WriteTraceFromText(ReadFile("tests/golden/gelu_a.txt"), "gelu_a.txt",
//                                      "/tmp/a/rank0.ugt"));
//   ASSIGN_OR_RETURN(std::string text, TraceToText("/tmp/a/rank0.ugt"));
//
// Text → binary → text → binary gives the same bytes; the printed text is the canonical form
// (explicit step/phase/depth, hex digests, compact meta JSON).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "trace/reader.h"
#include "trace/records.h"
#include "upguard/status.h"

namespace upguard {

// Parses `text` and writes it as a binary trace at `out_path`. `source` names the text in error
// messages ("<source>:<line>: <what is wrong>"). Without an `end` line the trace gets no End
// record (an incomplete trace, as if the recorder had been killed).
Status WriteTraceFromText(std::string_view text, std::string_view source,
                          const std::string& out_path);

// Renders the binary trace at `trace_path`. A damaged trace renders its readable records and a
// final "# damage: <message>" line; `damage` (if not null) receives the damage.
StatusOr<std::string> TraceToText(const std::string& trace_path,
                                  std::optional<TraceDamage>* damage = nullptr);

// One op in the text form: its "op ..." line and one indented "in"/"out" line per argument,
// each ending in '\n'. For tools that show ops to people (`upguard show`, diff reports).
std::string OpToText(const OpRecord& op, const StringTable& strings);
// A Collective record: its "collective ..." line (every field) and an "out" line per output.
std::string CollectiveToText(uint64_t op_seq, const CollectiveInfo& info,
                             const StringTable& strings);

}  // namespace upguard

// TraceIndex: a trace file mapped into memory and indexed by step, for readers that need the
// ops of only some steps (the diff decodes the first differing step of a 10 M-op trace, not all
// of it).
//
//   ASSIGN_OR_RETURN(std::unique_ptr<TraceIndex> index, TraceIndex::Open("runs/a/rank0.ugt"));
//   RETURN_IF_ERROR(index->IndexAll());              // or IndexStep(k): only as far as needed
//   for (const StepSpan& span : index->steps()) ... span.step, span.op_count, span.end ...
//   std::vector<OpRecord> ops;                       // reused: no allocation once grown
//   std::optional<TraceDamage> damage = index->ReadStep(7, &ops);
//
// Indexing checks every frame as TraceReader does (framing, length, CRC; String, StepEnd, End
// and Collective records; each op's seq and step) and stops at the first damage with the same
// offset and message, so the steps it lists are the ones TraceReader's records group into. It
// goes on only as far as asked (IndexStep, IndexAll), so a reader can compare a step right after
// indexing it, while its pages are mapped and cached. It does not parse the rest of an Op
// payload: ReadStep does (and attaches the step's Collective records to their ops), and reports
// a malformed payload (possible only behind a valid CRC, from a buggy or newer writer) as damage
// at that op, worded as TraceReader words it. Truncate() then cuts the index there, as if
// indexing had stopped at it.
//
// Steps group ops as the diff always has: a record opens a new step when its step number differs
// from the open step's or the open step already has its StepEnd. Memory: the index (a few dozen
// bytes per step) and the string table; mapped pages are released behind the indexing.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/mapped_file.h"
#include "trace/reader.h"
#include "trace/record_codec.h"
#include "trace/records.h"
#include "trace/trace_checks.h"
#include "upguard/status.h"

namespace upguard {

struct StepSpan {
  uint32_t step = 0;
  uint64_t op_count = 0;
  std::optional<StepEndRecord> end;  // absent when the trace stops inside the step
  // Its frames: [begin, end_offset) holds its ops, its StepEnd (last, if any) and the String
  // and unknown records between them.
  uint64_t begin = 0;
  uint64_t end_offset = 0;
  uint64_t first_seq = 0;       // Op records before the step
  uint64_t records_before = 0;  // records (RunMeta included) before `begin`
  uint32_t strings_before = 0;  // StringTable size at `begin` (id 0 included)
  uint64_t collectives = 0;     // Collective records in the step (trace.md §5.6)
};

// A Collective record of a step, undecoded (TraceIndex::RawCollectives).
struct RawCollective {
  uint64_t op_index = 0;  // its op's index in the step (op_seq - first_seq)
  std::string_view payload;
  uint32_t strings_before = 0;  // the ids it may use
};

class TraceIndex {
 public:
  // Maps the file and checks its header and RunMeta record, with TraceReader's errors (missing
  // file, a directory, not a trace, bad version). Damage is not an error: damage() reports it
  // once indexing reaches it. Indexes nothing yet.
  static StatusOr<std::unique_ptr<TraceIndex>> Open(const std::string& path);

  // Indexes on until steps()[step_idx] is final (no later record can join it) or the readable
  // records end; returns whether that step exists. Fails when step numbers go down (two writers
  // in one file), as the run loader always has.
  StatusOr<bool> IndexStep(size_t step_idx);
  // Indexes on until every step numbered `step` or less is final.
  Status IndexThrough(uint32_t step);
  // Indexes to the end of the readable records.
  Status IndexAll();
  bool indexed_all() const { return done_; }

  const std::string& path() const { return path_; }
  uint16_t version() const { return version_; }  // the header's format version
  const std::string& meta_json() const { return meta_json_; }
  // The strings defined by the records indexed so far.
  const StringTable& strings() const { return strings_; }
  // The steps indexed so far; all but the last are final, the last too once indexed_all().
  const std::vector<StepSpan>& steps() const { return steps_; }
  size_t final_steps() const {
    if (done_ || steps_.empty() || steps_.back().end) return steps_.size();
    return steps_.size() - 1;
  }
  // Once indexed_all(): the End record was read.
  bool complete() const { return complete_; }
  // Once indexed_all(): the Stopped record was read (trace.md §5.7), when it was.
  const std::optional<StoppedRecord>& stopped() const { return stopped_; }
  // Damage met so far.
  const std::optional<TraceDamage>& damage() const { return damage_; }

  // Decodes the ops of steps()[step_idx] into `ops` (resized to the step's op count; element k
  // is reused for the step's k-th op), each with its Collective record attached
  // (AttachCollective). On a malformed op payload returns the damage, with the ops before it in
  // `ops`. Releases the step's mapped pages when done.
  std::optional<TraceDamage> ReadStep(size_t step_idx, std::vector<OpRecord>* ops) const;

  // The Op payloads of one step in file order, undecoded, for comparing two traces byte by
  // byte. Each comes with the number of strings defined before it (the ids it may use).
  class RawOps {
   public:
    RawOps(const TraceIndex& index, size_t step_idx);
    // False after the step's last op.
    bool Next(std::string_view* payload, uint32_t* strings_before);

   private:
    const char* data_;
    uint64_t offset_;
    uint64_t end_;
    uint32_t strings_;
  };
  // The Collective records of steps()[step_idx] in file order (none when its `collectives` is 0;
  // indexing checked them).
  std::vector<RawCollective> RawCollectives(size_t step_idx) const;
  // Releases the mapped pages of steps()[step_idx] (after reading it through RawOps).
  void ReleaseStep(size_t step_idx) const;

  // Cuts the index at damage ReadStep found in steps()[step_idx] after `ops_kept` of its ops:
  // later steps go, the step keeps those ops (and is dropped if none), complete() turns false,
  // and indexing is over.
  void Truncate(size_t step_idx, uint64_t ops_kept, TraceDamage damage);

 private:
  explicit TraceIndex(std::unique_ptr<MappedFile> file) : file_(std::move(file)) {}
  Status OpenRecords();
  // Indexes one more frame; sets done_ at the end of the readable records (and error_ when
  // step numbers go down).
  void IndexFrame();
  void Damage(const RecordError& error);

  std::unique_ptr<MappedFile> file_;
  uint16_t version_ = 0;
  std::string path_;
  std::string meta_json_;
  StringTable strings_;
  std::vector<StepSpan> steps_;
  bool complete_ = false;
  std::optional<StoppedRecord> stopped_;
  std::optional<TraceDamage> damage_;
  uint64_t op_count_ = 0;
  // Indexing state.
  bool done_ = false;
  Status error_;         // a step number that went down: sticky
  uint64_t offset_ = 0;  // of the next frame
  uint64_t records_ = 0;
  uint64_t next_begin_ = 0;  // where the next step's frames start, and the counts there
  uint64_t next_records_ = 0;
  uint32_t next_strings_ = 0;
  uint64_t released_ = 0;  // mapped pages before this were released
  uint64_t populated_ = 0;
  CollectivePlacement placement_;
  OpRecord scratch_;                   // for error paths
  CollectiveInfo scratch_collective_;  // for checking Collective records
};

}  // namespace upguard

// What the rings say about the job as a whole, for the analyzer (analyzer.h): each collective
// as every rank saw it, who a group's members are, what a rank does now, and the text the
// findings are written in.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "watch/analyzer.h"

namespace upguard::watch {

// "120 ms" or "3.4 s"; a number with `digits` decimals.
std::string Duration(double seconds);
std::string Fixed(double value, int digits = 1);
double Median(std::vector<double> values);
double Percentile95(std::vector<double> values);
// "rank 1" or "ranks 0,2".
std::string RankList(const std::vector<int>& ranks);
bool Done(const SlotView& slot);
const GroupView* FindGroup(const RingSnapshot& ring, const std::string& name);
const RankLook* RankOf(const std::vector<RankLook>& ranks, int rank);

// One collective as every rank that still holds it saw it: (group name, seq) -> rank -> slot.
struct Collective {
  std::string group;
  uint64_t seq = 0;
  std::map<int, const SlotView*> by_rank;
};
using CollectiveKey = std::pair<std::string, uint64_t>;
std::map<CollectiveKey, Collective> Collectives(const std::vector<RankLook>& ranks);

// "allreduce float32[105472] in group 0, seq 12 (train.py:145)".
std::string Describe(const std::string& group, const SlotView& slot);
// "allreduce float32[1024]" (without the count: "allreduce float32").
std::string Signature(const SlotView& slot, bool with_count);
// Collectives whose inputs may differ between ranks by design (a root's list, split sizes).
bool CountsMayDiffer(const std::string& op);
// The group's members: the global ranks any ring lists for it (sorted), else every ring.
std::vector<int> Members(const std::vector<RankLook>& ranks, const std::string& group);

// NCCL's per-channel progress of `slot` (a collective every member issued) on each member
// whose process has the NCCL profiler plugin: "; NCCL on rank 1 (nccl:5a3f allreduce): channel
// 1 sent 3 of 8 steps, received 8 of 8". The entry is the oldest of the same op and bytes
// NCCL has not completed; only channels with steps left are named. Empty without the plugin.
std::string ChannelProgress(const std::vector<RankLook>& ranks, const std::vector<int>& members,
                            const SlotView& slot);

// What a rank does now, as the cause of whatever waits on it.
struct Doing {
  std::string cause;
  std::string detail;
  std::vector<std::string> stack;
};
Doing WhatItDoes(const RankLook& look, uint64_t now_ns, const AnalyzerOptions& options);
// A rank on another host whose monitor has not reported for over `stale_s` (the host or that
// monitor is gone): its ring as last seen says nothing about now, so it is named only as
// `unseen`, never for what it did then.
bool Unseen(const RankLook& look, uint64_t now_ns, const AnalyzerOptions& options);

}  // namespace upguard::watch

// What upguard writes into a run directory, by name: the entries a run is made of, and the
// hidden ones that recording keeps beside it while it runs (docs/cli.md, "The run directory").
//
//   if (IsUpguardRunEntry(dir, name)) ...   // rank0.ugt, meta.json (upguard's), captures/, ...
//   if (IsStagingName(name)) ...            // .upguard-record-1234: a recording not moved in
#pragma once

#include <string>

namespace upguard {

// DIR/.upguard-record-<pid>: where a recording writes until it is moved into DIR.
inline constexpr char kStagingPrefix[] = ".upguard-record-";
// DIR/.upguard-lock: names the recording that writes into DIR (rundir/run_lock.h).
inline constexpr char kLockName[] = ".upguard-lock";
// Inside a staging directory: one file per process writing into it, and the commit token.
inline constexpr char kMemberPrefix[] = ".upguard-member-";
inline constexpr char kCommitToken[] = ".upguard-commit";
// Inside a staging directory: its leader checked DIR; the job's other members may write.
inline constexpr char kReadyName[] = ".upguard-ready";

// "rank<N>.ugt" with N decimal digits.
bool IsRankTraceName(const std::string& name);

// A staging directory's name: kStagingPrefix and at least one character.
bool IsStagingName(const std::string& name);

// Recording's own bookkeeping (the lock, members, the commit token, their temporary files):
// names starting with ".upguard-" that are not staging directories. Never part of a run.
bool IsBookkeepingName(const std::string& name);

// Whether dir/name is something upguard writes into a run directory: rank<N>.ugt (an upguard
// trace: IsUpguardTrace), a meta.json
// with "upguard_version", online.json, online.ranks.json, online.rank<N>.json, a captures/
// folder holding only capture files (rank<R>.step<S>.op<I>.safetensors), or an explain/
// folder holding only such entries and the re-run's stderr.txt (`diff --explain`).
bool IsUpguardRunEntry(const std::string& dir, const std::string& name);

// `path` is a meta.json that upguard wrote (a JSON object with "upguard_version").
bool IsUpguardMeta(const std::string& path);
// `path` is a regular file that starts as an upguard trace does (its magic, "UPGTRACE", or a
// prefix of it: a recorder killed while it wrote the header), or is empty.
bool IsUpguardTrace(const std::string& path);

}  // namespace upguard

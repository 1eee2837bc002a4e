// `upguard record`'s progress line: while the command runs, the terminal's last row shows the
// ranks recording, the step they reached, the steps and ops recorded and the ops per second,
// read from the progress records the ranks keep (docs/formats/record-progress.md). When the
// command has ended, the same records say which ranks stopped recording early, and where.
//
//   std::unique_ptr<RecordProgress> progress = RecordProgress::Begin(/*draw=*/true);
//   setenv("UPGUARD_RECORD_PROGRESS", progress->dir().c_str(), 1);       // in the child
//   ... every 100 ms while waiting: progress->Poll();
//   progress->EndDrawing();                       // the row given back
//   std::string note = StoppedRanksNote(progress->Read());  // "" unless a rank stopped early
//   progress.reset();  // the records and their directory removed
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli/bottom_row.h"
#include "recorder/progress_file.h"

namespace upguard {

class RecordProgress {
 public:
  // Null when the directory could not be made. Draws the line only with `draw` and a terminal
  // on stderr.
  static std::unique_ptr<RecordProgress> Begin(bool draw);
  ~RecordProgress();

  const std::string& dir() const { return dir_; }
  // Reads the ranks' records and redraws the line (at most every 250 ms).
  void Poll();
  // Gives the terminal's row back (the line is drawn no more).
  void EndDrawing() { row_.reset(); }
  // Reads the ranks' records: the last good one of each rank, by rank.
  const std::vector<RankProgress>& Read();

  // The line for these ranks; `ops_per_second` < 0 = not known yet; `seconds` since the start.
  static std::string Line(const std::vector<RankProgress>& ranks, double ops_per_second,
                          double seconds);

 private:
  RecordProgress(std::string dir, std::unique_ptr<BottomRow> row);

  std::string dir_;
  std::unique_ptr<BottomRow> row_;  // null: no line drawn
  std::chrono::steady_clock::time_point started_, last_draw_;
  std::string drawn_;                // the line on the row now
  std::vector<RankProgress> ranks_;  // the last good record of each rank, by rank
  // (when, ops of all ranks) each time the ops changed, the last 10 seconds: the rate.
  std::deque<std::pair<std::chrono::steady_clock::time_point, uint64_t>> samples_;
};

// "incomplete: rank 0 stopped recording at step 37 (disk full): its trace ends there" for the
// ranks whose recording stopped early; "" when none did.
std::string StoppedRanksNote(const std::vector<RankProgress>& ranks);

}  // namespace upguard

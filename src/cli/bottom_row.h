// The terminal's last row, kept for a status line while a command we started writes above it
// (`upguard record`'s progress line). The rows above become the scrolling region (DECSTBM), so
// the command's own output scrolls there and never runs into the line; each draw is one write(),
// which a terminal does not interleave with another process's write. Given back (region reset,
// row cleared) when destroyed.
//
//   if (std::unique_ptr<BottomRow> row = BottomRow::Reserve()) {
//     row->Draw("upguard record: 1 rank, step 3, ...");
//   }
#pragma once

#include <memory>
#include <string>

namespace upguard {

class BottomRow {
 public:
  // Null unless stderr is a terminal (not TERM=dumb) at least 4 rows tall.
  static std::unique_ptr<BottomRow> Reserve();
  ~BottomRow();
  BottomRow(const BottomRow&) = delete;
  BottomRow& operator=(const BottomRow&) = delete;

  // Shows `text` on the row, cut to the terminal's width. Follows a resized terminal.
  void Draw(const std::string& text);

  // The bytes that reserve a row on a terminal `rows` tall, draw `text` on it, and give it back
  // (what a terminal gets; tested without one).
  static std::string ReserveBytes(int rows);
  static std::string DrawBytes(int rows, int columns, const std::string& text, bool inverse);
  static std::string ReleaseBytes(int rows);

 private:
  BottomRow(int rows, bool inverse) : rows_(rows), inverse_(inverse) {}

  int rows_;
  bool inverse_;  // drawn in inverse video (not with NO_COLOR)
};

}  // namespace upguard

#include "cli/bottom_row.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "report/term_color.h"

namespace upguard {
namespace {

constexpr int kMinRows = 4;

bool TerminalSize(int* rows, int* columns) {
  winsize size = {};
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &size) != 0 || size.ws_row == 0) return false;
  *rows = size.ws_row;
  *columns = size.ws_col > 0 ? size.ws_col : 80;
  return true;
}

void WriteAll(const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t wrote = write(STDERR_FILENO, bytes.data() + done, bytes.size() - done);
    if (wrote <= 0) return;  // a closed terminal: the line is lost, nothing else is
    done += static_cast<size_t>(wrote);
  }
}

// "ESC [ top ; bottom r": the scrolling region (moves the cursor home, so it is saved around it).
std::string Region(int bottom) { return "\0337\033[1;" + std::to_string(bottom) + "r\0338"; }

}  // namespace

std::string BottomRow::ReserveBytes(int rows) {
  // A new line first, so that a cursor on the last row moves up out of it with the text above.
  return "\n" + Region(rows - 1) + "\033[1A";
}

std::string BottomRow::DrawBytes(int rows, int columns, const std::string& text, bool inverse) {
  std::string shown = text.substr(0, static_cast<size_t>(std::max(1, columns - 1)));
  return "\0337\033[" + std::to_string(rows) + ";1H\033[2K" + (inverse ? "\033[7m" : "") + shown +
         (inverse ? "\033[0m" : "") + "\0338";
}

std::string BottomRow::ReleaseBytes(int rows) {
  return "\0337\033[r\033[" + std::to_string(rows) + ";1H\033[2K\0338";
}

std::unique_ptr<BottomRow> BottomRow::Reserve() {
  const char* term = std::getenv("TERM");
  if (isatty(STDERR_FILENO) != 1 || (term != nullptr && std::strcmp(term, "dumb") == 0)) {
    return nullptr;
  }
  int rows = 0, columns = 0;
  if (!TerminalSize(&rows, &columns) || rows < kMinRows) return nullptr;
  WriteAll(ReserveBytes(rows));
  return std::unique_ptr<BottomRow>(new BottomRow(rows, ColorWanted(stderr)));
}

void BottomRow::Draw(const std::string& text) {
  int rows = rows_, columns = 80;
  if (!TerminalSize(&rows, &columns) || rows < kMinRows) return;
  std::string bytes;
  if (rows != rows_) {  // resized: the region follows, the old row is part of it now
    bytes += ReleaseBytes(rows_) + Region(rows - 1);
    rows_ = rows;
  }
  WriteAll(bytes + DrawBytes(rows_, columns, text, inverse_));
}

BottomRow::~BottomRow() { WriteAll(ReleaseBytes(rows_)); }

}  // namespace upguard

#include "recorder/arg_vectors.h"

namespace upguard {
namespace {

constexpr size_t kSpareVectors = 4;  // an op's inputs and outputs, and a nested op's

std::vector<std::vector<ArgRecord>>& Spares() {
  thread_local std::vector<std::vector<ArgRecord>> spares;
  return spares;
}

}  // namespace

std::vector<ArgRecord> TakeArgVector() {
  std::vector<std::vector<ArgRecord>>& spares = Spares();
  if (spares.empty()) return {};
  std::vector<ArgRecord> records = std::move(spares.back());
  spares.pop_back();
  return records;
}

void GiveBackArgVector(std::vector<ArgRecord>&& records) {
  std::vector<std::vector<ArgRecord>>& spares = Spares();
  if (spares.size() < kSpareVectors && records.capacity() > 0) spares.push_back(std::move(records));
}

}  // namespace upguard

// A direct-mapped cache in front of the trace writer's string table, keyed by where a string
// lives. Op and argument names point into operator schemas and never move, so most lookups
// are a pointer compare and a short memcmp instead of hashing the string (and, for strings
// past the small-string size, allocating a key). Not thread-safe: the recorder's lock guards it.
//
//   InternCache cache;
//   StringId id = cache.Intern(name, [&](std::string_view s) { return writer->Intern(s); });
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "trace/records.h"

namespace upguard {

class InternCache {
 public:
  template <typename InternFn>
  StringId Intern(std::string_view s, InternFn&& intern) {
    if (std::optional<StringId> found = Find(s)) return *found;
    const StringId id = intern(s);
    Put(s, id);
    return id;
  }

  // The id cached for `s` at this address (kEmptyString for ""), or nullopt.
  std::optional<StringId> Find(std::string_view s) const {
    if (s.empty()) return kEmptyString;
    const Slot& slot = slots_[Hash(s) & (kSlots - 1)];
    if (slot.data == s.data() && slot.text.size() == s.size() &&
        std::memcmp(slot.text.data(), s.data(), s.size()) == 0) {
      return slot.id;
    }
    return std::nullopt;
  }

  void Put(std::string_view s, StringId id) {
    if (s.empty()) return;
    Slot& slot = slots_[Hash(s) & (kSlots - 1)];
    slot.id = id;
    slot.data = s.data();
    slot.text.assign(s.data(), s.size());
  }

  void Clear() {
    for (Slot& slot : slots_) slot = Slot{};
  }

 private:
  static constexpr size_t kSlots = 1024;
  struct Slot {
    const char* data = nullptr;
    std::string text;
    StringId id = kEmptyString;
  };
  static size_t Hash(std::string_view s) {
    const auto address = reinterpret_cast<uintptr_t>(s.data());
    return (address >> 3) ^ (address >> 13) ^ (s.size() * 0x9E3779B97F4A7C15ull);
  }
  std::array<Slot, kSlots> slots_;
};

}  // namespace upguard

#include "watch/summary.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/file.h"
#include "watch/exchange.h"
#include "watch/ring_reader.h"
#include "watch/ring_writer.h"

namespace upguard::watch {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kSecond = 1'000'000'000ull;

std::string TempDir(const char* name) {
  const std::string dir = ::testing::TempDir() + "/" + name + std::to_string(getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// A rank's look as a ring gives it: a group, a completed and an open collective, a step.
RankLook RingLook(const std::string& dir, int rank) {
  const std::string path = dir + "/rank" + std::to_string(rank) + ".ring";
  auto writer = RingWriter::Create(path, {rank, 2, rank, 4242, "host-a"}, 8);
  EXPECT_TRUE(writer.ok()) << writer.status().message();
  RingWriter& ring = **writer;
  const int group = ring.Group({"0", "gloo", 2, rank, {0, 1}});
  ring.NoteStep(1);
  const uint64_t done = ring.Issue({group, "allreduce", "float32", "train.py:57", 100, 400});
  ring.Started(done);
  ring.Completed(done);
  ring.Issue({group, "broadcast", "int64", "", 7, 56, 0});
  ring.NoteOp("aten::mm");
  ring.Beat({1000, 2000, 1, 2, 3});
  auto reader = RingReader::Open(path);
  EXPECT_TRUE(reader.ok()) << reader.status().message();
  RankLook look;
  look.ring = (*reader)->Snapshot();
  look.process = ProcessState::kStopped;
  return look;
}

TEST(Summary, WrittenIsReadBack) {
  const std::string dir = TempDir("summary_rt");
  Summary summary{"host-a", "machine", 77, 123 * kSecond, {RingLook(dir, 0), RingLook(dir, 1)}};
  summary.ranks[1].process = ProcessState::kRunning;
  summary.ranks[1].ring.stack = {3, 3, 9, "train.py:10 in main\n"};
  const std::string text = SummaryToJson(summary);
  auto back = SummaryFromJson(text, "a.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(SummaryToJson(*back), text);  // every field survives the trip
  EXPECT_EQ((std::tuple{back->host, back->monitor_pid, back->written_ns}),
            (std::tuple{std::string("host-a"), 77, 123 * kSecond}));
  ASSERT_EQ(back->ranks.size(), 2u);
  const RingSnapshot& ring = back->ranks[0].ring;
  const RingSnapshot& original = summary.ranks[0].ring;
  EXPECT_EQ(back->ranks[0].process, ProcessState::kStopped);
  EXPECT_EQ((std::tuple{ring.rank, ring.pid, ring.hostname, ring.heartbeat_ns, ring.net.throttled}),
            (std::tuple{0, 4242, std::string("host-a"), original.heartbeat_ns, uint64_t{3}}));
  EXPECT_EQ(ring.groups[0].members, (std::vector<int>{0, 1}));
  ASSERT_EQ(ring.slots.size(), 2u);
  EXPECT_EQ((std::tuple{ring.slots[0].state, ring.slots[0].op, ring.slots[0].completed_ns}),
            (std::tuple{SlotState::kCompleted, std::string("allreduce"),
                        original.slots[0].completed_ns}));
  EXPECT_EQ((std::tuple{ring.slots[1].state, ring.slots[1].root}),
            (std::tuple{SlotState::kIssued, 0}));
  EXPECT_EQ(ring.activity.last_op, "aten::mm");
  EXPECT_EQ(back->ranks[1].ring.stack.text, "train.py:10 in main\n");
}

TEST(Summary, KeepsTheNewestSlotsAndEveryOneInFlight) {
  RankLook look;
  for (uint64_t entry = 0; entry < kSummarySlotsKept + 44; ++entry) {
    SlotView slot;
    slot.entry = entry + 1;
    slot.state = entry == 3 ? SlotState::kStarted : SlotState::kCompleted;
    look.ring.slots.push_back(slot);
  }
  RankLook remote = look;
  remote.seen_by = "host-b";
  const std::vector<RankLook> kept = SummaryRanks({look, remote});
  ASSERT_EQ(kept.size(), 1u);  // another host's rank is that host's to publish
  const std::vector<SlotView>& slots = kept[0].ring.slots;
  ASSERT_EQ(slots.size(), kSummarySlotsKept + 1);
  EXPECT_EQ(slots[0].entry, 4u);  // the old one still in flight
  EXPECT_EQ(slots[1].entry, 45u);
  EXPECT_EQ(slots.back().entry, kSummarySlotsKept + 44);
}

TEST(Summary, ABadDocumentNamesTheFileAndField) {
  const std::string dir = TempDir("summary_bad");
  const std::string text = SummaryToJson({"h", "h", 1, 2, {RingLook(dir, 0)}});
  auto doc = nlohmann::json::parse(text);
  auto message = [](const nlohmann::json& bad) {
    auto parsed = SummaryFromJson(bad.dump(), "x/h.json");
    return parsed.ok() ? std::string("ok") : parsed.status().message();
  };
  auto bad = doc;
  bad["ranks"][0]["slots"][1]["op"] = 5;
  EXPECT_NE(message(bad).find("x/h.json: field ranks[0].slots[1].op is missing or not a string"),
            std::string::npos)
      << message(bad);
  bad = doc;
  bad["ranks"][0]["slots"][0]["state"] = "done";
  EXPECT_NE(message(bad).find("ranks[0].slots[0].state is 'done'"), std::string::npos);
  bad = doc;
  bad["ranks"][0]["net"].erase("links");
  EXPECT_NE(message(bad).find("field ranks[0].net.links is missing"), std::string::npos);
  bad = doc;
  bad["ranks"][0]["process"] = "asleep";
  EXPECT_NE(message(bad).find("ranks[0].process is 'asleep'"), std::string::npos);
  bad = doc;
  bad["ranks"][0]["slots"][0]["group"] = 9;
  EXPECT_NE(message(bad).find("ranks[0].slots[0].group is 9, past the 1 groups"),
            std::string::npos);
  bad = doc;
  bad["ranks"][0]["activity"]["step"] = UINT64_MAX;
  EXPECT_NE(message(bad).find("ranks[0].activity.step is missing or not an integer"),
            std::string::npos);
  bad = doc;
  bad["ranks"][0]["groups"][0]["members"] = {0, -1, "2"};
  EXPECT_NE(message(bad).find("ranks[0].groups[0].members is missing or not an array"),
            std::string::npos);
  bad = doc;
  bad["version"] = 2;
  EXPECT_NE(message(bad).find("field version is 2"), std::string::npos);
  auto not_json = SummaryFromJson("{\"format\": ", "x/h.json");
  ASSERT_FALSE(not_json.ok());
  EXPECT_NE(not_json.status().message().find("x/h.json: not a JSON object"), std::string::npos);
  EXPECT_EQ(ReadSummary(dir + "/none.json").status().code(), StatusCode::kNotFound);
}

TEST(SummaryExchange, EachHostSeesTheOthersRanks) {
  const std::string dir = TempDir("exchange");
  const std::string rings = TempDir("exchange_rings");
  const uint64_t now = RealtimeNs();
  auto a = Exchange::Open(dir, "host-a", now);
  auto b = Exchange::Open(dir, "host-b", now);
  ASSERT_TRUE(a.ok() && b.ok());
  RankLook zero = RingLook(rings, 0), one = RingLook(rings, 1);
  (*a)->Publish({zero}, now);
  (*b)->Publish({one}, now);
  std::vector<RankLook> seen_by_b = (*b)->Others(now + kSecond / 10);
  ASSERT_EQ(seen_by_b.size(), 1u);
  EXPECT_EQ((std::tuple{seen_by_b[0].ring.rank, seen_by_b[0].seen_by, seen_by_b[0].process}),
            (std::tuple{0, std::string("host-a"), ProcessState::kStopped}));
  EXPECT_EQ(seen_by_b[0].seen_ns, now);  // first seen: as of its own write time
  EXPECT_EQ((*a)->Others(now)[0].ring.rank, 1);

  // Within 250 ms only a change of a process's state is published.
  zero.ring.activity.step = 9;
  (*a)->Publish({zero}, now + kSecond / 10);
  EXPECT_EQ((*b)->Others(now + kSecond / 5)[0].ring.activity.step, 1);
  zero.process = ProcessState::kGone;
  (*a)->Publish({zero}, now + kSecond / 5);
  seen_by_b = (*b)->Others(now + kSecond / 2);
  EXPECT_EQ((std::tuple{seen_by_b[0].process, seen_by_b[0].ring.activity.step}),
            (std::tuple{ProcessState::kGone, int64_t{9}}));
  EXPECT_EQ(seen_by_b[0].seen_ns, now + kSecond / 2);  // changed: seen now, on b's clock

  // A summary that stops changing keeps its last ranks and its last change's time.
  EXPECT_EQ((*b)->Others(now + 5 * kSecond)[0].seen_ns, now + kSecond / 2);
  EXPECT_TRUE((*b)->TakeWarnings().empty());
}

TEST(SummaryExchange, WarnsOfABadSummaryAndASharedName) {
  const std::string dir = TempDir("exchange_bad");
  const uint64_t now = RealtimeNs();
  auto a = Exchange::Open(dir, "host-a", now);
  auto twin = Exchange::Open(dir, "host-a", now);
  ASSERT_TRUE(a.ok() && twin.ok());
  ASSERT_TRUE(WriteFileAtomically(dir + "/host-c.json", "[]").ok());
  ASSERT_TRUE(WriteFileAtomically(dir + "/.hidden.json", "[]").ok());
  // Left over from a job that ended long before: ignored.
  ASSERT_TRUE(WriteFileAtomically(dir + "/old.json", SummaryToJson({"old", "old", 1, 1, {}})).ok());
  (*a)->Publish({}, now);
  (*twin)->Publish({}, now);
  (*a)->Publish({}, now + kSecond);  // its file is the twin's now
  EXPECT_TRUE((*a)->Others(now).empty());
  const std::vector<std::string> warnings = (*a)->TakeWarnings();
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("another monitor writes " + dir + "/host-a.json too"),
            std::string::npos);
  EXPECT_NE(warnings[1].find(dir + "/host-c.json: not a JSON object"), std::string::npos);
  (*a)->Others(now);
  EXPECT_TRUE((*a)->TakeWarnings().empty());  // each once
  EXPECT_FALSE(Exchange::Open(dir, "a/b", now).ok());
}

// A rank seen through a summary, made by hand: times on one clock (start pair 0, 0).
RankLook Remote(int rank, uint64_t issued_seq, uint64_t beat_ns, uint64_t seen_ns) {
  RankLook look;
  look.ring.rank = rank;
  look.ring.world_size = 2;
  look.ring.heartbeat_ns = beat_ns;
  look.ring.groups = {{"0", "gloo", 2, rank, issued_seq, issued_seq, {0, 1}}};
  look.ring.activity.ops = 1;
  look.ring.activity.last_op_ns = beat_ns;
  look.process = ProcessState::kRunning;
  look.seen_by = "host-b";
  look.seen_ns = seen_ns;
  look.written_ns = seen_ns;
  return look;
}

TEST(SummaryExchange, ARankWhoseHostFellSilentIsNamedOnlyAsUnseen) {
  const uint64_t now = 100 * kSecond;
  RankLook waiting = Remote(0, 5, now, 0);  // read here: waits 3 s in seq 5
  waiting.seen_by.clear();
  waiting.ring.groups[0].completed_seq = 4;
  SlotView slot;
  slot.entry = 5, slot.seq = 5, slot.state = SlotState::kStarted, slot.op = "allreduce";
  slot.issued_ns = now - 3 * kSecond;
  waiting.ring.slots = {slot};

  // Its host's monitor reported 0.2 s ago and the rank is stopped: dead, stopped.
  RankLook stopped = Remote(1, 4, now - 3 * kSecond, now - kSecond / 5);
  stopped.process = ProcessState::kStopped;
  std::vector<Alert> alerts = Analyzer().Look({waiting, stopped}, now);
  ASSERT_FALSE(alerts.empty());
  EXPECT_EQ((std::tuple{alerts[0].trigger, alerts[0].cause, alerts[0].ranks}),
            (std::tuple{std::string("dead"), std::string("stopped"), std::vector<int>{1}}));

  // Its host's monitor has been silent for 10 s: the last state says nothing of now; the stall
  // names the rank as unseen and no dead rank is made up.
  RankLook silent = Remote(1, 4, now - 10 * kSecond, now - 10 * kSecond);
  silent.process = ProcessState::kStopped;
  alerts = Analyzer().Look({waiting, silent}, now);
  ASSERT_EQ(alerts.size(), 1u);
  EXPECT_EQ((std::tuple{alerts[0].trigger, alerts[0].cause, alerts[0].ranks}),
            (std::tuple{std::string("stall"), std::string("unseen"), std::vector<int>{1}}));
  EXPECT_NE(alerts[0].detail.find("the monitor of its host host-b has not reported for 10"),
            std::string::npos)
      << alerts[0].detail;

  // Its host's monitor wrote 1.4 s ago, when the heartbeat was 0.2 s old: it is judged as of
  // then, not found unresponsive for the delay of the exchange.
  RankLook late = Remote(1, 5, now - 1600 * kSecond / 1000, now - 1400 * kSecond / 1000);
  RankLook idle = waiting;
  idle.ring.slots.clear();
  EXPECT_TRUE(Analyzer().Look({idle, late}, now).empty());

  // A silent host's rank that was last seen in a collective never stalls a job that moves on.
  RankLook done = waiting;
  done.ring.slots[0].state = SlotState::kCompleted;
  done.ring.slots[0].completed_ns = now - kSecond;
  done.ring.groups[0].completed_seq = 5;
  RankLook stuck = Remote(1, 5, now - 10 * kSecond, now - 10 * kSecond);
  stuck.ring.groups[0].completed_seq = 4;
  stuck.ring.slots = {slot};
  EXPECT_TRUE(Analyzer().Look({done, stuck}, now).empty());
}

}  // namespace
}  // namespace upguard::watch

#include "watch_feed.h"

#include <ATen/record_function.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "call_site.h"
#include "collectives.h"
#include "ivalue_args.h"
#include "op_info.h"
#include "watch/net_sample.h"

namespace upguard::torch_adapter {
namespace {

// A collective issued and not yet started by its backend: what its scope is matched by.
struct OpenCall {
  uint64_t entry = 0;
  std::string kind;            // CollectiveKind of the op
  const void* data = nullptr;  // the first tensor's values
};

struct ScopeCtx : at::ObserverContext {
  uint64_t entry = watch::RingWriter::kNoEntry;
};

// The watch of this process: made by WatchStart, never destroyed (a callback on another thread
// may still hold it after WatchClose).
struct Feed {
  std::unique_ptr<watch::RingWriter> ring;
  std::vector<at::CallbackHandle> handles;
  std::mutex mu;  // groups and open calls: taken once per collective, never per op
  std::unordered_map<const void*, int> groups;  // ProcessGroup address -> ring group
  std::deque<OpenCall> open;
  std::thread heartbeat;
  std::mutex beat_mu;
  std::condition_variable beat_cv;
  bool stopping = false;  // under beat_mu
  int64_t steps = 0;      // Optimizer.step ends so far
};

std::atomic<Feed*> g_feed{nullptr};  // null: no watch, or a forked child
std::atomic<bool> g_started{false};

struct WatchThread {
  uint32_t depth = 0;           // ops open on this thread
  uint32_t backend_scopes = 0;  // a backend's collective scope runs here: its worker
};
WatchThread& ThisThread() {
  thread_local WatchThread state;
  return state;
}

const char* DtypeName(c10::ScalarType type) {
  switch (type) {
    case c10::kFloat:
      return "float32";
    case c10::kDouble:
      return "float64";
    case c10::kHalf:
      return "float16";
    case c10::kBFloat16:
      return "bfloat16";
    case c10::kLong:
      return "int64";
    case c10::kInt:
      return "int32";
    case c10::kShort:
      return "int16";
    case c10::kChar:
      return "int8";
    case c10::kByte:
      return "uint8";
    case c10::kBool:
      return "bool";
    default:
      return c10::toString(type);
  }
}

// The ring group of a ProcessGroup argument, entered on first sight (the resolver names it).
int GroupOf(Feed& feed, const c10::IValue& value) {
  const void* key = nullptr;
  if (value.isObject()) {
    const c10::ivalue::Object& object = value.toObjectRef();
    if (!object.slots().empty() && object.getSlot(0).isCapsule()) {
      key = object.getSlot(0).toCapsule().get();
    }
  }
  {
    std::lock_guard<std::mutex> lock(feed.mu);
    auto it = feed.groups.find(key);
    if (it != feed.groups.end()) return it->second;
  }
  watch::GroupInfo info;
  info.name = "?";
  for (auto& [address, group] : ResolveGroupsNow()) {  // takes the GIL: no lock held
    if (address != key) continue;
    info.name = group.name;
    info.backend = group.backend;
    info.size = group.group_size;
    info.rank_in_group = int(group.group_rank);
    info.members.assign(group.ranks.begin(), group.ranks.end());
  }
  const int index = feed.ring->Group(info);
  std::lock_guard<std::mutex> lock(feed.mu);
  feed.groups[key] = index;
  return index;
}

void Issue(Feed& feed, const at::RecordFunction& fn) {
  const OpInfo& info = LookupOpInfo(fn);
  if (!info.collective) return;
  c10::ArrayRef<const c10::IValue> inputs = fn.inputs();
  const int group_arg = info.collective_group_arg;
  const int group = group_arg >= 0 && size_t(group_arg) < inputs.size()
                        ? GroupOf(feed, inputs[group_arg])
                        : feed.ring->Group({"?", "", 0, -1, {}});
  watch::CollectiveIssue issue;
  issue.group = group;
  const std::string kind = CollectiveKind(fn.name());
  issue.op = kind;
  const void* first = nullptr;
  c10::ScalarType dtype = c10::ScalarType::Undefined;
  // The tensors the op sends: its first tensor argument (the written one for in-place forms).
  for (const c10::IValue& value : inputs) {
    ForEachTensor(value, [&](const at::Tensor& t) {
      if (!t.defined()) return;
      if (first == nullptr && t.has_storage() && t.layout() == c10::kStrided) first = t.data_ptr();
      if (dtype == c10::ScalarType::Undefined) dtype = t.scalar_type();
      if (dtype == t.scalar_type()) {
        issue.count += uint64_t(t.numel());
        issue.bytes += uint64_t(t.numel()) * t.element_size();
      }
    });
    if (dtype != c10::ScalarType::Undefined) break;
  }
  issue.dtype = dtype == c10::ScalarType::Undefined ? "" : DtypeName(dtype);
  const std::string site = CurrentCallSite();
  issue.call_site = site;
  const uint64_t entry = feed.ring->Issue(issue);
  std::lock_guard<std::mutex> lock(feed.mu);
  feed.open.push_back(OpenCall{entry, kind, first});
  if (feed.open.size() > 4096) feed.open.pop_front();  // a backend without scopes
}

std::unique_ptr<at::ObserverContext> OnOpEnter(const at::RecordFunction& fn) {
  WatchThread& thread = ThisThread();
  const uint32_t depth = thread.depth++;
  Feed* feed = g_feed.load(std::memory_order_acquire);
  if (feed == nullptr || thread.backend_scopes > 0) return nullptr;
  const char* name = fn.name();
  if (name[0] == 'c' && std::strncmp(name, "c10d::", 6) == 0) {
    try {
      Issue(*feed, fn);
    } catch (const std::exception& e) {  // never the training's problem
      std::fprintf(stderr, "upguard watch: %s not written: %s\n", name, e.what());
    }
  } else if (depth == 0) {
    // The autograd engine's wrapper around a node names the node after this prefix.
    constexpr size_t kEvaluate = sizeof("autograd::engine::evaluate_function: ") - 1;
    feed->ring->NoteOp(std::strncmp(name, "autograd::engine::evaluate_function: ", kEvaluate) == 0
                           ? name + kEvaluate
                           : name);
  }
  return nullptr;
}

void OnOpExit(const at::RecordFunction&, at::ObserverContext*) {
  WatchThread& thread = ThisThread();
  if (thread.depth > 0) --thread.depth;
}

std::unique_ptr<at::ObserverContext> OnScopeEnter(const at::RecordFunction& fn) {
  Feed* feed = g_feed.load(std::memory_order_acquire);
  if (feed == nullptr || !IsCollectiveScope(fn.name())) return nullptr;
  WatchThread& thread = ThisThread();
  auto ctx = std::make_unique<ScopeCtx>();
  if (thread.depth == 0) ++thread.backend_scopes;  // opened outside any op: a worker
  const std::string kind = CollectiveKind(fn.name());
  const void* first = nullptr;
  try {
    for (const c10::IValue& value : fn.inputs()) {
      ForEachTensor(value, [&](const at::Tensor& t) {
        if (first == nullptr && t.defined() && t.has_storage() && t.layout() == c10::kStrided) {
          first = t.data_ptr();
        }
      });
    }
  } catch (const std::exception&) {  // matched as the oldest of its kind instead
    first = nullptr;
  }
  {
    std::lock_guard<std::mutex> lock(feed->mu);
    auto match = feed->open.end();
    for (auto it = feed->open.begin(); it != feed->open.end(); ++it) {
      if (it->kind != kind) continue;
      if (first != nullptr && it->data == first) {
        match = it;
        break;
      }
      if (match == feed->open.end()) match = it;  // the oldest of its kind
    }
    if (match != feed->open.end()) {
      ctx->entry = match->entry;
      feed->open.erase(match);
    }
  }
  feed->ring->Started(ctx->entry);
  return ctx;
}

void OnScopeExit(const at::RecordFunction& fn, at::ObserverContext* ctx_base) {
  if (ctx_base == nullptr) {
    if (std::strncmp(fn.name(), "Optimizer.step#", 15) == 0) {
      if (Feed* feed = g_feed.load(std::memory_order_acquire)) {
        feed->ring->NoteStep(++feed->steps);
      }
    }
    return;
  }
  WatchThread& thread = ThisThread();
  if (thread.depth == 0 && thread.backend_scopes > 0) --thread.backend_scopes;
  auto* ctx = static_cast<ScopeCtx*>(ctx_base);
  if (Feed* feed = g_feed.load(std::memory_order_acquire)) feed->ring->Completed(ctx->entry);
}

void Beat(Feed* feed) {
  std::unique_lock<std::mutex> lock(feed->beat_mu);
  while (!feed->stopping) {
    lock.unlock();
    feed->ring->Beat(watch::ReadNetSample());
    lock.lock();
    feed->beat_cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return feed->stopping; });
  }
}

// A forked child shares the parent's mapping: it must never write it.
void ForgetInChild() { g_feed.store(nullptr, std::memory_order_release); }

}  // namespace

Status WatchStart(const WatchOptions& options) {
  if (g_started.exchange(true)) {
    return FailedPrecondition("upguard watch runs already in this process (" + WatchRingPath() +
                              ")");
  }
  auto ring = watch::RingWriter::Create(options.ring_path, options.identity);
  if (!ring.ok()) {
    g_started = false;
    return ring.status();
  }
  auto* feed = new Feed();  // never freed: see Feed
  feed->ring = std::move(*ring);
  static std::once_flag atfork;
  std::call_once(atfork, [] { pthread_atfork(nullptr, nullptr, ForgetInChild); });
  g_feed.store(feed, std::memory_order_release);
  feed->heartbeat = std::thread(Beat, feed);
  feed->handles.push_back(at::addGlobalCallback(at::RecordFunctionCallback(OnOpEnter, OnOpExit)
                                                    .needsInputs(true)
                                                    .scopes({at::RecordScope::FUNCTION})));
  feed->handles.push_back(
      at::addGlobalCallback(at::RecordFunctionCallback(OnScopeEnter, OnScopeExit)
                                .needsInputs(true)  // a backend's scope names the work's tensors
                                .scopes({at::RecordScope::USER_SCOPE})));
  return Status::Ok();
}

std::string WatchRingPath() {
  Feed* feed = g_feed.load(std::memory_order_acquire);
  return feed != nullptr ? feed->ring->path() : "";
}

void WatchDataloader(bool inside) {
  if (Feed* feed = g_feed.load(std::memory_order_acquire)) feed->ring->NoteDataloader(inside);
}

uint64_t WatchStackRequest() {
  Feed* feed = g_feed.load(std::memory_order_acquire);
  return feed != nullptr ? feed->ring->StackRequest() : 0;
}

void WatchAnswerStack(uint64_t request, const std::string& text) {
  if (Feed* feed = g_feed.load(std::memory_order_acquire)) feed->ring->AnswerStack(request, text);
}

void WatchClose() {
  Feed* feed = g_feed.exchange(nullptr, std::memory_order_acq_rel);
  if (feed == nullptr) return;
  for (at::CallbackHandle handle : feed->handles) at::removeCallback(handle);
  {
    std::lock_guard<std::mutex> lock(feed->beat_mu);
    feed->stopping = true;
  }
  feed->beat_cv.notify_all();
  if (feed->heartbeat.joinable()) feed->heartbeat.join();
  feed->ring->Close();
  g_started.store(false);  // a later WatchStart makes a new ring (the old feed stays allocated)
}

}  // namespace upguard::torch_adapter

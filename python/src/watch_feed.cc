#include "watch_feed.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/record_function.h>
#include <pthread.h>
#include <torch/library.h>
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
#include "watch/net_sample.h"

namespace upguard::torch_adapter {
namespace {

// A collective issued and not yet started by its backend: what its scope is matched by.
struct OpenCall {
  uint64_t entry = 0;
  std::string kind;            // ScopeKind of the op
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
  std::unique_ptr<torch::Library> kernels;  // c10d's collective ops at BackendSelect
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
  bool issued = false;  // this thread issued a collective: it trains
  bool worker = false;  // a backend's collective scope opened here first: its worker
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

// A collective op as it is called: its arguments are the last ones on the stack.
void Issue(Feed& feed, const c10::FunctionSchema& schema, c10::ArrayRef<c10::IValue> inputs) {
  int group = -1;
  for (size_t idx = 0; idx < schema.arguments().size() && idx < inputs.size(); ++idx) {
    if (inputs[idx].isObject() &&
        schema.arguments()[idx].type()->str().find("ProcessGroup") != std::string::npos) {
      group = GroupOf(feed, inputs[idx]);
      break;
    }
  }
  if (group < 0) group = feed.ring->Group({"?", "", 0, -1, {}});
  watch::CollectiveIssue issue;
  issue.group = group;
  const std::string kind = CollectiveKind(schema.name());
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
  feed.open.push_back(OpenCall{entry, ScopeKind(kind), first});
  if (feed.open.size() > 4096) feed.open.pop_front();  // a backend without scopes
}

// Every c10d collective op passes here, at BackendSelect (on in every dispatch, inference mode
// included, below autograd and a tensor subclass's Python handler, above the backend's kernel):
// the call is issued, then dispatched on as if this kernel were not here.
void CollectiveKernel(const c10::OperatorHandle& op, c10::DispatchKeySet keys,
                      torch::jit::Stack* stack) {
  Feed* feed = g_feed.load(std::memory_order_acquire);
  if (feed != nullptr && !keys.has(c10::DispatchKey::Meta)) {  // not a fake tensor's trace
    ThisThread().issued = true;
    const size_t args = op.schema().arguments().size();
    try {
      Issue(
          *feed, op.schema(),
          c10::ArrayRef<c10::IValue>(*stack).slice(stack->size() - std::min(args, stack->size())));
    } catch (const std::exception& e) {  // never the training's problem
      std::fprintf(stderr, "upguard watch: %s not written: %s\n", op.schema().name().c_str(),
                   e.what());
    }
  }
  op.redispatchBoxed(
      keys & c10::DispatchKeySet(c10::DispatchKeySet::FULL_AFTER, c10::DispatchKey::BackendSelect),
      stack);
}

// c10d's ops that take a ProcessGroup (every collective and point-to-point op of this torch).
std::vector<std::string> CollectiveOps() {
  std::vector<std::string> names;
  for (const c10::OperatorName& name : c10::Dispatcher::singleton().getAllOpNames()) {
    if (name.name.rfind("c10d::", 0) != 0) continue;
    auto handle = c10::Dispatcher::singleton().findOp(name);
    if (!handle || !handle->hasSchema()) continue;
    for (const c10::Argument& argument : handle->schema().arguments()) {
      if (argument.type()->str().find("ProcessGroup") == std::string::npos) continue;
      names.push_back(name.overload_name.empty() ? name.name
                                                 : name.name + "." + name.overload_name);
      break;
    }
  }
  return names;
}

// A sampled op (one in kOpSampleEvery): the training thread's recent compute op. Every op would
// cost the training more than the watch may (RecordFunction on each op: 2-7 %).
constexpr double kOpSampleEvery = 64;
std::unique_ptr<at::ObserverContext> OnSampledOp(const at::RecordFunction& fn) {
  Feed* feed = g_feed.load(std::memory_order_acquire);
  if (feed == nullptr || ThisThread().worker) return nullptr;
  const char* name = fn.name();
  // The autograd engine's wrapper around a node names the node after this prefix.
  constexpr size_t kEvaluate = sizeof("autograd::engine::evaluate_function: ") - 1;
  feed->ring->NoteOp(std::strncmp(name, "autograd::engine::evaluate_function: ", kEvaluate) == 0
                         ? name + kEvaluate
                         : name);
  return nullptr;
}

std::unique_ptr<at::ObserverContext> OnScopeEnter(const at::RecordFunction& fn) {
  Feed* feed = g_feed.load(std::memory_order_acquire);
  if (feed == nullptr || !IsCollectiveScope(fn.name())) return nullptr;
  WatchThread& thread = ThisThread();
  auto ctx = std::make_unique<ScopeCtx>();
  if (!thread.issued) thread.worker = true;  // gloo's worker threads; never the issuing one
  const std::string kind = ScopeKind(CollectiveKind(fn.name()));
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

// How often a thread waiting for the monitor's stack request looks at the ring: without the GIL.
constexpr int kStackLookMs = 25;

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
  feed->kernels = std::make_unique<torch::Library>(
      torch::Library::IMPL, "c10d", c10::DispatchKey::BackendSelect, __FILE__, __LINE__);
  for (const std::string& name : CollectiveOps()) {
    feed->kernels->impl(name.substr(6).c_str(),
                        torch::CppFunction::makeFromBoxedFunction<&CollectiveKernel>());
  }
  feed->handles.push_back(at::addGlobalCallback(at::RecordFunctionCallback(OnSampledOp)
                                                    .samplingProb(1.0 / kOpSampleEvery)
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

uint64_t WatchWaitStackRequest(uint64_t answered, double timeout_s) {
  Feed* feed = g_feed.load(std::memory_order_acquire);
  if (feed == nullptr) return answered;
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  std::unique_lock<std::mutex> lock(feed->beat_mu);
  while (!feed->stopping) {
    const uint64_t request = feed->ring->StackRequest();
    if (request != answered) return request;
    if (std::chrono::steady_clock::now() >= until) break;
    feed->beat_cv.wait_for(lock, std::chrono::milliseconds(kStackLookMs));
  }
  return answered;
}

uint64_t WatchStackAnswered() {
  Feed* feed = g_feed.load(std::memory_order_acquire);
  return feed != nullptr ? feed->ring->StackAnswered() : 0;
}

void WatchAnswerStack(uint64_t request, const std::string& text) {
  if (Feed* feed = g_feed.load(std::memory_order_acquire)) feed->ring->AnswerStack(request, text);
}

void WatchClose() {
  Feed* feed = g_feed.exchange(nullptr, std::memory_order_acq_rel);
  if (feed == nullptr) return;
  for (at::CallbackHandle handle : feed->handles) at::removeCallback(handle);
  feed->kernels.reset();  // c10d's ops dispatch as before
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

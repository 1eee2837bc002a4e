// The C entry points of libupguard_nccl_profiler.so: NCCL loads the library named by
// NCCL_PROFILER_PLUGIN and looks up `ncclProfiler_v5` (NCCL 2.28 and later) or `ncclProfiler_v4`
// (NCCL 2.27). They translate NCCL's event descriptors (profiler_abi.h) into NcclProfiler calls.
//
// The plugin lives in the training process, so it must never fail it: each entry point returns
// success whatever happens; on any problem (no UPGUARD_WATCH_DIR, a ring that cannot be made,
// an exception) the plugin says why once on stderr, asks NCCL for no more events and stays
// quiet.
#include <nccl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>

#include "watch/nccl/nccl_profiler.h"
#include "watch/nccl/profiler_abi.h"

static_assert(ncclSuccess == upguard::watch::nccl_abi::kSuccess);
static_assert(sizeof(ncclResult_t) == sizeof(upguard::watch::nccl_abi::Result));

namespace upguard::watch {
namespace {

namespace abi = nccl_abi;

constexpr int kEventMask =
    abi::kColl | abi::kP2p | abi::kProxyOp | abi::kProxyStep | abi::kKernelCh;

// The process's plugin: the profiler exists from the first communicator's init to the last
// one's finalize. Never destroyed itself: NCCL may finalize from an exit handler.
struct Plugin {
  std::mutex mutex;  // init and finalize
  std::unique_ptr<NcclProfiler> profiler;
  std::atomic<NcclProfiler*> live{nullptr};  // what the event entry points use
  std::atomic<bool> disabled{false};
  std::atomic<int*> mask{nullptr};  // NCCL's activation mask, to turn the events off
};
Plugin& ThePlugin() {
  static Plugin* plugin = new Plugin;
  return *plugin;
}

void Disable(const std::string& why) {
  Plugin& plugin = ThePlugin();
  if (int* mask = plugin.mask.load()) __atomic_store_n(mask, 0, __ATOMIC_RELAXED);
  if (!plugin.disabled.exchange(true)) {
    std::fprintf(stderr, "upguard nccl profiler: off: %s\n", why.c_str());
  }
}

int EnvInt(const char* name, int fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  return *end == '\0' ? int(value) : fallback;
}

// Under plugin.mutex: the profiler, made for the first communicator.
StatusOr<NcclProfiler*> ProfilerFor(int nranks, int rank) {
  Plugin& plugin = ThePlugin();
  if (plugin.profiler) return plugin.profiler.get();
  const char* dir = std::getenv("UPGUARD_WATCH_DIR");
  if (dir == nullptr || *dir == '\0') return NotFound("UPGUARD_WATCH_DIR is not set");
  const std::string watch_dir = std::string(dir) + "/watch";
  if (mkdir(watch_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return IoError("cannot make " + watch_dir + ": " + std::strerror(errno));
  }
  RingIdentity identity;
  identity.rank = EnvInt("RANK", rank);
  identity.world_size = EnvInt("WORLD_SIZE", nranks);
  identity.local_rank = EnvInt("LOCAL_RANK", -1);
  identity.pid = int(getpid());
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  identity.hostname = host;
  ASSIGN_OR_RETURN(auto ring,
                   RingWriter::Create(NcclProfiler::RingPath(dir, identity.rank), identity,
                                      NcclProfiler::kSlots, NcclProfiler::kChannels));
  plugin.profiler =
      std::make_unique<NcclProfiler>(std::move(ring), identity.rank, identity.world_size);
  plugin.live.store(plugin.profiler.get(), std::memory_order_release);
  return plugin.profiler.get();
}

abi::Result Init(void** context, uint64_t comm_hash, int* mask, const char* comm_name, int nranks,
                 int rank) noexcept {
  try {
    *context = nullptr;
    Plugin& plugin = ThePlugin();
    std::lock_guard<std::mutex> lock(plugin.mutex);
    plugin.mask.store(mask);
    if (plugin.disabled.load()) {
      __atomic_store_n(mask, 0, __ATOMIC_RELAXED);
      return abi::kSuccess;
    }
    auto profiler = ProfilerFor(nranks, rank);
    if (!profiler.ok()) {
      Disable(profiler.status().message());
      return abi::kSuccess;
    }
    *context = (*profiler)->AddComm(comm_hash, nranks, rank);
    __atomic_store_n(mask, kEventMask, __ATOMIC_RELAXED);
  } catch (const std::exception& error) {
    Disable(std::string("init: ") + error.what());
  } catch (...) {
    Disable("init failed");
  }
  return abi::kSuccess;
}

abi::Result Finalize(void* context) noexcept {
  try {
    if (context == nullptr) return abi::kSuccess;
    Plugin& plugin = ThePlugin();
    std::lock_guard<std::mutex> lock(plugin.mutex);
    if (!plugin.profiler) return abi::kSuccess;
    plugin.profiler->RemoveComm(static_cast<NcclComm*>(context));
    if (!plugin.profiler->HasComms()) {
      plugin.live.store(nullptr, std::memory_order_release);
      plugin.profiler.reset();  // closes the ring: the process ended its communicators
    }
  } catch (...) {
    Disable("finalize failed");
  }
  return abi::kSuccess;
}

NcclProfiler* Live() {
  Plugin& plugin = ThePlugin();
  if (plugin.disabled.load(std::memory_order_relaxed)) return nullptr;
  return plugin.live.load(std::memory_order_acquire);
}

template <typename Descr>
abi::Result StartEvent(void* context, void** handle, Descr* descr) noexcept {
  try {
    *handle = nullptr;
    NcclProfiler* profiler = Live();
    if (profiler == nullptr || context == nullptr || descr == nullptr) return abi::kSuccess;
    auto* comm = static_cast<NcclComm*>(context);
    const abi::DescrData& data = descr->data;
    NcclEvent* event = nullptr;
    switch (uint64_t(descr->type)) {
      case abi::kColl: {
        NcclCall call;
        call.seq_number = data.coll.seq_number;
        call.func = data.coll.func;
        call.datatype = data.coll.datatype;
        call.count = data.coll.count;
        call.root = data.coll.root;
        call.channels = data.coll.n_channels;
        call.warps = data.coll.n_warps;
        call.algo = data.coll.algo;
        call.proto = data.coll.proto;
        event = profiler->StartCall(comm, call);
        break;
      }
      case abi::kP2p: {
        NcclCall call;
        call.p2p = true;
        call.func = data.p2p.func;
        call.datatype = data.p2p.datatype;
        call.count = data.p2p.count;
        call.root = data.p2p.peer;
        call.channels = data.p2p.n_channels;
        event = profiler->StartCall(comm, call);
        break;
      }
      case abi::kProxyOp:
        event = profiler->StartProxyOp(comm, descr->parent_obj, data.proxy_op.pid,
                                       data.proxy_op.channel_id, data.proxy_op.n_steps,
                                       data.proxy_op.is_send != 0);
        break;
      case abi::kProxyStep:
        event = profiler->StartProxyStep(comm, descr->parent_obj);
        break;
      case abi::kKernelCh:
        event = profiler->StartKernelCh(comm, descr->parent_obj, data.kernel_ch.channel_id);
        break;
      default:
        break;
    }
    *handle = event;
  } catch (...) {
    Disable("an event could not be recorded");
  }
  return abi::kSuccess;
}

abi::Result StopEvent(void* handle) noexcept {
  try {
    if (NcclProfiler* profiler = Live()) profiler->Stop(handle);
  } catch (...) {
    Disable("an event could not be stopped");
  }
  return abi::kSuccess;
}

abi::Result RecordEventState(void* handle, int state, abi::StateArgs* args) noexcept {
  try {
    if (NcclProfiler* profiler = Live()) profiler->RecordState(handle, state);
  } catch (...) {
    Disable("an event's state could not be recorded");
  }
  return abi::kSuccess;
}

abi::Result InitV5(void** context, uint64_t comm_id, int* mask, const char* comm_name, int n_nodes,
                   int nranks, int rank, abi::DebugLogger logfn) {
  return Init(context, comm_id, mask, comm_name, nranks, rank);
}

abi::Result InitV4(void** context, int* mask, const char* comm_name, uint64_t comm_hash,
                   int n_nodes, int nranks, int rank, abi::DebugLogger logfn) {
  return Init(context, comm_hash, mask, comm_name, nranks, rank);
}

}  // namespace
}  // namespace upguard::watch

extern "C" {
__attribute__((visibility("default"))) upguard::watch::nccl_abi::ProfilerV5 ncclProfiler_v5 = {
    "upguard",
    upguard::watch::InitV5,
    upguard::watch::StartEvent<upguard::watch::nccl_abi::EventDescrV5>,
    upguard::watch::StopEvent,
    upguard::watch::RecordEventState,
    upguard::watch::Finalize,
};
__attribute__((visibility("default"))) upguard::watch::nccl_abi::ProfilerV4 ncclProfiler_v4 = {
    "upguard",
    upguard::watch::InitV4,
    upguard::watch::StartEvent<upguard::watch::nccl_abi::EventDescrV4>,
    upguard::watch::StopEvent,
    upguard::watch::RecordEventState,
    upguard::watch::Finalize,
};
}

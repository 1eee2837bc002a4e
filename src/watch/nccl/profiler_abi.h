// The NCCL profiler-plugin ABI that libupguard_nccl_profiler.so exports, declared here in our
// own words. The layouts mirror NCCL 2.28's src/include/plugin/nccl_profiler.h and
// src/include/plugin/profiler/profiler_v5.h (interface version 5, the newest NCCL 2.28 loads)
// and profiler_v4.h (version 4, NCCL 2.27, also loaded by 2.28). They must match NCCL's byte for
// byte: the static_asserts below pin the fields we read, and were checked against those headers.
// Only the parts of the descriptor union that the plugin reads are declared; NCCL owns the
// memory, so a shorter declaration of the union is safe to read through.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace upguard::watch::nccl_abi {

// ncclResult_t (an int-sized C enum): the plugin only ever returns success.
using Result = int;
inline constexpr Result kSuccess = 0;

// Event type bits (nccl_profiler.h): the descriptor's `type` and the activation mask.
enum EventType : uint64_t {
  kGroup = 1 << 0,
  kColl = 1 << 1,
  kP2p = 1 << 2,
  kProxyOp = 1 << 3,
  kProxyStep = 1 << 4,
  kProxyCtrl = 1 << 5,
  kKernelCh = 1 << 6,
  kNetPlugin = 1 << 7,
  kGroupApi = 1 << 8,
  kCollApi = 1 << 9,
  kP2pApi = 1 << 10,
  kKernelLaunch = 1 << 11,
};

// ncclProfilerEventState_t (an int-sized C enum): the values recordEventState passes.
enum EventState : int {
  kProxyOpInProgress = 19,
  kProxyStepSendGpuWait = 8,
  kProxyStepSendPeerWait = 20,
  kProxyStepSendWait = 9,
  kProxyStepRecvWait = 10,
  kProxyStepRecvFlushWait = 11,
  kProxyStepRecvGpuWait = 12,
  kKernelChStop = 22,
};

// ncclDebugLogger_t: a printf-like logger (unused by the plugin).
using DebugLogger = void (*)(int level, unsigned long flags, const char* file, int line,
                             const char* fmt, ...);

struct CollDescr {
  uint64_t seq_number;
  const char* func;
  const void* send_buff;
  void* recv_buff;
  size_t count;
  int root;
  const char* datatype;
  uint8_t n_channels;
  uint8_t n_warps;
  const char* algo;
  const char* proto;
  void* parent_group;  // version 5 only
};

struct P2pDescr {
  const char* func;
  void* buff;
  const char* datatype;
  size_t count;
  int peer;
  uint8_t n_channels;
  void* parent_group;  // version 5 only
};

struct ProxyOpDescr {
  pid_t pid;
  uint8_t channel_id;
  int peer;
  int n_steps;
  int chunk_size;
  int is_send;
};

struct ProxyStepDescr {
  int step;
};

struct KernelChDescr {
  uint8_t channel_id;
  uint64_t p_timer;
};

union DescrData {
  CollDescr coll;
  P2pDescr p2p;
  ProxyOpDescr proxy_op;
  ProxyStepDescr proxy_step;
  KernelChDescr kernel_ch;
};

// ncclProfilerEventDescr_v5_t and _v4_t: they differ in the width of `type`, and version 4's
// union lacks the `parent_group` fields (its descriptor is 104 bytes); the plugin never reads
// `parent_group`.
struct EventDescrV5 {
  uint64_t type;
  void* parent_obj;
  int rank;
  DescrData data;
};
struct EventDescrV4 {
  uint8_t type;
  void* parent_obj;
  int rank;
  DescrData data;
};

// ncclProfilerEventStateArgs_v5_t (= _v4_t).
union StateArgs {
  size_t proxy_step_trans_size;
  int proxy_ctrl_appended_ops;
  void* net_plugin_data;
  uint64_t kernel_ch_p_timer;
};

// ncclProfiler_v5_t: the exported symbol `ncclProfiler_v5`.
struct ProfilerV5 {
  const char* name;
  Result (*init)(void** context, uint64_t comm_id, int* activation_mask, const char* comm_name,
                 int n_nodes, int nranks, int rank, DebugLogger logfn);
  Result (*start_event)(void* context, void** handle, EventDescrV5* descr);
  Result (*stop_event)(void* handle);
  Result (*record_event_state)(void* handle, int state, StateArgs* args);
  Result (*finalize)(void* context);
};

// ncclProfiler_v4_t: the exported symbol `ncclProfiler_v4`; init takes its arguments in
// another order.
struct ProfilerV4 {
  const char* name;
  Result (*init)(void** context, int* activation_mask, const char* comm_name, uint64_t comm_hash,
                 int n_nodes, int nranks, int rank, DebugLogger logfn);
  Result (*start_event)(void* context, void** handle, EventDescrV4* descr);
  Result (*stop_event)(void* handle);
  Result (*record_event_state)(void* handle, int state, StateArgs* args);
  Result (*finalize)(void* context);
};

static_assert(offsetof(EventDescrV5, parent_obj) == 8 && offsetof(EventDescrV5, rank) == 16);
static_assert(offsetof(EventDescrV5, data) == 24 && offsetof(EventDescrV4, data) == 24);
static_assert(offsetof(CollDescr, count) == 32 && offsetof(CollDescr, datatype) == 48);
static_assert(offsetof(CollDescr, n_channels) == 56 && offsetof(CollDescr, algo) == 64);
static_assert(offsetof(CollDescr, parent_group) == 80 && sizeof(CollDescr) == 88);
static_assert(offsetof(P2pDescr, count) == 24 && offsetof(P2pDescr, peer) == 32);
static_assert(offsetof(P2pDescr, n_channels) == 36);
static_assert(offsetof(ProxyOpDescr, channel_id) == 4 && offsetof(ProxyOpDescr, n_steps) == 12);
static_assert(offsetof(ProxyOpDescr, is_send) == 20);
static_assert(offsetof(KernelChDescr, p_timer) == 8);
static_assert(sizeof(EventDescrV5) == 112 && sizeof(StateArgs) == 8);
static_assert(sizeof(ProfilerV5) == 6 * sizeof(void*) && sizeof(ProfilerV4) == 6 * sizeof(void*));

}  // namespace upguard::watch::nccl_abi

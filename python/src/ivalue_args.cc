#include "ivalue_args.h"

#include <cstdio>
#include <limits>
#include <sstream>

#include "base/text.h"
#include "collectives.h"
#include "digest_cache.h"
#include "unread_args.h"

namespace upguard::torch_adapter {

DType ToDType(c10::ScalarType type) {
  switch (type) {
    case c10::ScalarType::Float:
      return DType::kFloat32;
    case c10::ScalarType::Double:
      return DType::kFloat64;
    case c10::ScalarType::Half:
      return DType::kFloat16;
    case c10::ScalarType::BFloat16:
      return DType::kBFloat16;
    case c10::ScalarType::Char:
      return DType::kInt8;
    case c10::ScalarType::Byte:
      return DType::kUInt8;
    case c10::ScalarType::Short:
      return DType::kInt16;
    case c10::ScalarType::Int:
      return DType::kInt32;
    case c10::ScalarType::Long:
      return DType::kInt64;
    case c10::ScalarType::Bool:
      return DType::kBool;
    case c10::ScalarType::ComplexFloat:
      return DType::kComplex64;
    case c10::ScalarType::ComplexDouble:
      return DType::kComplex128;
    default:
      return DType::kInvalid;
  }
}

// The storage holds every byte the view reaches. Not so for a tensor subclass's wrapper
// (DTensor: its data is the local shard) or a storage resized to nothing while the tensor keeps
// its shape (FSDP2 frees its unsharded parameters after use).
bool StorageCoversView(const at::Tensor& tensor) {
  if (tensor.numel() == 0) return true;
  const c10::Storage& storage = tensor.storage();
  if (storage.data() == nullptr) return false;
  int64_t last = tensor.storage_offset();
  for (int64_t dim = 0; dim < tensor.dim(); ++dim) {
    if (tensor.stride(dim) < 0) return false;
    last += (tensor.size(dim) - 1) * tensor.stride(dim);
  }
  return static_cast<size_t>(last + 1) * tensor.element_size() <= storage.nbytes();
}

bool IsReadable(const at::Tensor& tensor) {
  return tensor.defined() && !tensor.is_nested() && tensor.layout() == c10::kStrided &&
         tensor.device().is_cpu() && tensor.has_storage() &&
         ToDType(tensor.scalar_type()) != DType::kInvalid && !tensor.is_conj() &&
         !tensor.is_neg() && StorageCoversView(tensor);
}

TensorView ViewOf(const at::Tensor& tensor) {
  TensorView view;
  view.dtype = ToDType(tensor.scalar_type());
  view.ndim = static_cast<int>(tensor.dim());
  view.sizes = tensor.sizes().data();
  view.strides = tensor.strides().data();
  view.data = tensor.data_ptr();
  return view;
}

namespace {

// A readable, exact text of a non-tensor value; equal values give equal texts.
std::string ScalarText(const c10::IValue& value) {
  if (value.isDouble()) return ExactDouble(value.toDouble());
  if (value.isInt()) return std::to_string(value.toInt());
  if (value.isBool()) return value.toBool() ? "True" : "False";
  if (value.isString()) return "'" + value.toStringRef() + "'";
  if (value.isComplexDouble()) {
    c10::complex<double> z = value.toComplexDouble();
    return "(" + ExactDouble(z.real()) + "+" + ExactDouble(z.imag()) + "j)";
  }
  if (value.isIntList() || value.isDoubleList() || value.isBoolList() || value.isList()) {
    std::string text = "[";
    const c10::List<c10::IValue> list = value.toList();
    for (size_t idx = 0; idx < list.size(); ++idx) {
      if (idx > 0) text += ", ";
      text += ScalarText(list.get(idx));
    }
    return text + "]";
  }
  if (value.isDevice()) return value.toDevice().str();
  std::ostringstream text;
  text << "<" << value.tagKind() << ">";
  return text.str();
}

bool ListHasTensor(const c10::IValue& value) {
  if (!value.isList()) return false;
  for (const c10::IValue& item : value.toListRef()) {
    if (item.isTensor() || ListHasTensor(item)) return true;  // Tensor[][] (c10d::allgather_)
  }
  return false;
}

std::string_view Store(std::string text, ArgBatch* batch) {
  return batch->strings.emplace_back(std::move(text));
}

// Reads the value of a wrapped number straight from memory (no ATen call: we may be inside a
// callback). Python numbers wrap as double, int64, bool or complex double.
std::string WrappedNumberText(const at::Tensor& tensor) {
  const void* data = tensor.data_ptr();
  switch (tensor.scalar_type()) {
    case c10::ScalarType::Double:
      return ExactDouble(*static_cast<const double*>(data));
    case c10::ScalarType::Long:
      return std::to_string(*static_cast<const int64_t*>(data));
    case c10::ScalarType::Bool:
      return *static_cast<const bool*>(data) ? "True" : "False";
    case c10::ScalarType::ComplexDouble: {
      const auto* z = static_cast<const c10::complex<double>*>(data);
      return "(" + ExactDouble(z->real()) + "+" + ExactDouble(z->imag()) + "j)";
    }
    default:
      return std::string("<wrapped ") + c10::toString(tensor.scalar_type()) + ">";
  }
}

Arg TensorArg(const at::Tensor& tensor, std::string_view name, ArgKind wanted, ArgBatch* batch) {
  if (!tensor.defined()) return Arg::None(name);
  // A Python number passed where the schema wants a Tensor ("x * 0.5") is a wrapped number:
  // it is an argument, not data, and is recorded as one.
  if (tensor.unsafeGetTensorImpl()->is_wrapped_number()) {
    return Arg::Scalar(name, Store(WrappedNumberText(tensor), batch));
  }
  TensorView view;
  view.dtype = ToDType(tensor.scalar_type());
  // A nested tensor has no sizes (asking throws): not read, with its dtype only.
  if (tensor.is_nested()) return Arg::Unread(name, view, UnreadReason::kLayout, "nested");
  view.ndim = static_cast<int>(tensor.dim());
  view.sizes = tensor.sizes().data();
  if (!IsReadable(tensor)) return OtherwiseReadArg(tensor, name, view, wanted, batch);
  // A collective is still writing it: its bytes now depend on timing. (First: a collective
  // found complete here marks what it wrote as written.)
  if (wanted == ArgKind::kTensor && InFlight(tensor)) {
    return Arg::Unread(name, view, UnreadReason::kInFlight, "");
  }
  if (wanted == ArgKind::kTensor && Uninit().IsUninit(tensor)) wanted = ArgKind::kUninit;
  if (wanted != ArgKind::kTensor) return Arg::Shaped(wanted, name, view);
  Arg arg = Arg::Tensor(name, ViewOf(tensor));
  if (std::optional<CachedDigest> cached = Digests().Find(tensor)) {
    if (cached->pending != nullptr) {
      arg.known_pending = std::move(cached->pending);
    } else {
      arg.known = &batch->known.emplace_back(cached->digest);
    }
  }
  return arg;
}

void AppendValue(const c10::IValue& value, std::string_view name, ArgKind wanted, ArgBatch* batch) {
  if (value.isTensor()) {
    batch->args.push_back(TensorArg(value.toTensor(), name, wanted, batch));
    batch->tensors.push_back(&value.toTensor());
  } else if (value.isTensorList() || ListHasTensor(value)) {
    c10::ArrayRef<c10::IValue> items = value.toListRef();
    for (size_t idx = 0; idx < items.size(); ++idx) {
      std::string_view item_name =
          Store(std::string(name) + "[" + std::to_string(idx) + "]", batch);
      AppendValue(items[idx], item_name, wanted, batch);
    }
  } else if (value.isNone()) {
    batch->args.push_back(Arg::None(name));
    batch->tensors.push_back(nullptr);
  } else {
    batch->args.push_back(Arg::Scalar(name, Store(ScalarText(value), batch)));
    batch->tensors.push_back(nullptr);
  }
}

std::string_view NameOf(const std::vector<std::string>& names, size_t idx, const char* prefix,
                        ArgBatch* batch) {
  if (idx < names.size() && !names[idx].empty()) return names[idx];
  return Store(prefix + std::to_string(idx), batch);
}

}  // namespace

void ForEachTensor(const c10::IValue& value, const std::function<void(const at::Tensor&)>& fn) {
  if (value.isTensor()) {
    if (value.toTensor().defined()) fn(value.toTensor());
  } else if (value.isList()) {
    for (const c10::IValue& item : value.toListRef()) ForEachTensor(item, fn);
  }
}

ScopedBatch::ScopedBatch(int which)
    : batch_([which]() -> ArgBatch& {
        thread_local ArgBatch batches[2];
        return batches[which];
      }()) {
  batch_.Clear();
}

void AppendTensorValues(const c10::IValue& value, std::string_view name, ArgBatch* batch) {
  AppendValue(value, name, ArgKind::kTensor, batch);
}

namespace {

// Inference tensors have no version counter (reading it throws): they count as unchanged until
// an op is seen writing them.
int64_t VersionOf(const at::Tensor& tensor) {
  return tensor.is_inference() ? -1 : static_cast<int64_t>(tensor._version());
}

}  // namespace

UninitTracker& Uninit() {
  static auto* tracker = new UninitTracker();  // lives until exit; callbacks may run late
  return *tracker;
}

void UninitTracker::MarkUninit(const at::Tensor& tensor) {
  if (!tensor.has_storage()) return;
  c10::StorageImpl* storage = tensor.storage().unsafeGetStorageImpl();
  std::lock_guard<std::mutex> lock(mu_);
  Entry entry{c10::weak_intrusive_ptr<c10::StorageImpl>(tensor.storage().getWeakStorageImpl()),
              VersionOf(tensor)};
  entries_.insert_or_assign(storage, std::move(entry));
}

void UninitTracker::MarkWritten(const at::Tensor& tensor) {
  if (!tensor.has_storage()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (entries_.empty()) return;
  entries_.erase(tensor.storage().unsafeGetStorageImpl());
}

bool UninitTracker::IsUninit(const at::Tensor& tensor) {
  std::lock_guard<std::mutex> lock(mu_);
  if (entries_.empty()) return false;
  auto it = entries_.find(tensor.storage().unsafeGetStorageImpl());
  return it != entries_.end() && it->second.version == VersionOf(tensor);
}

void UninitTracker::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.clear();
}

void UninitTracker::DropExpired() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end();) {
    it = it->second.storage.expired() ? entries_.erase(it) : std::next(it);
  }
}

void AppendInputs(const OpInfo& info, c10::ArrayRef<const c10::IValue> values, ArgBatch* batch) {
  for (size_t idx = 0; idx < values.size(); ++idx) {
    const bool is_out = idx < info.input_is_out.size() && info.input_is_out[idx];
    ArgKind wanted = ArgKind::kTensor;
    if (is_out) wanted = ArgKind::kUninit;
    if (info.pure_view || (idx == 0 && info.overwrites_self)) wanted = ArgKind::kAlias;
    AppendValue(values[idx], NameOf(info.input_names, idx, "arg", batch), wanted, batch);
  }
}

void AppendOutputs(const OpInfo& info, const std::vector<c10::IValue>& values, ArgBatch* batch) {
  for (size_t idx = 0; idx < values.size(); ++idx) {
    ArgKind wanted = ArgKind::kTensor;
    if (info.Result(idx) == ResultKind::kView) wanted = ArgKind::kAlias;
    if (info.Result(idx) == ResultKind::kUninit) wanted = ArgKind::kUninit;
    AppendValue(values[idx], NameOf(info.result_names, idx, "result", batch), wanted, batch);
  }
}

void RememberDigests(const ArgBatch& batch, const std::vector<ArgRecord>& records) {
  for (size_t idx = 0; idx < records.size() && idx < batch.tensors.size(); ++idx) {
    const ArgRecord& record = records[idx];
    if (batch.tensors[idx] == nullptr || record.kind != ArgKind::kTensor) continue;
    if (batch.args[idx].known != nullptr || batch.args[idx].known_pending != nullptr) continue;
    // A resolved conjugate view: the cache's key does not hold the conjugate bit.
    if (batch.args[idx].tensor.data != batch.tensors[idx]->data_ptr()) continue;
    Digests().Put(*batch.tensors[idx], TensorDigest{record.digest, record.has_stats, record.stats},
                  record.pending);
  }
}

void OfferToHashPool(const Recorder& recorder, ArgBatch* batch) {
  if (!recorder.Offloads(std::numeric_limits<int64_t>::max())) return;  // no pool
  for (size_t idx = 0; idx < batch->args.size() && idx < batch->tensors.size(); ++idx) {
    Arg& arg = batch->args[idx];
    const at::Tensor* tensor = batch->tensors[idx];
    // Not a value resolved into the batch (a conjugate view's): its memory is not the storage's.
    if (arg.kind != ArgKind::kTensor || tensor == nullptr || arg.known != nullptr ||
        arg.known_pending != nullptr || !tensor->has_storage() ||
        arg.tensor.data != tensor->data_ptr()) {
      continue;
    }
    const int64_t bytes = arg.tensor.numel() * static_cast<int64_t>(DTypeSize(arg.tensor.dtype));
    if (!recorder.Offloads(bytes)) continue;
    // The storage, not the tensor: a second reference to a tensor changes what the training
    // does (autograd steals a gradient only while nothing else holds it; measured: ResNet-18's
    // gradients were cloned, 52 more ops a step).
    arg.owner = std::make_shared<const c10::Storage>(tensor->storage());
    arg.memory = tensor->storage().unsafeGetStorageImpl();
  }
}

void WaitBeforeOpWrites(Recorder* recorder, const OpInfo& info,
                        c10::ArrayRef<const c10::IValue> inputs) {
  if (!recorder->HashesPending()) return;
  if (!info.has_schema) return recorder->WaitForHashes();
  for (int idx : info.mutable_inputs) {
    if (static_cast<size_t>(idx) >= inputs.size()) continue;
    ForEachTensor(inputs[idx], [recorder](const at::Tensor& t) {
      if (t.has_storage()) recorder->WaitBeforeWrite(t.storage().unsafeGetStorageImpl());
    });
  }
}

void ForgetWritten(const at::Tensor& tensor) {
  Uninit().MarkWritten(tensor);
  Digests().Invalidate(tensor);
}

void TrackResults(const OpInfo& info, const std::vector<c10::IValue>& values) {
  for (size_t idx = 0; idx < values.size(); ++idx) {
    switch (info.Result(idx)) {
      case ResultKind::kUninit:
        ForEachTensor(values[idx], [](const at::Tensor& t) { Uninit().MarkUninit(t); });
        break;
      case ResultKind::kValue:
        ForEachTensor(values[idx], [](const at::Tensor& t) { ForgetWritten(t); });
        break;
      case ResultKind::kView:
        break;
    }
  }
}

}  // namespace upguard::torch_adapter

#include "state.h"

#include <omp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

#include "executor.h"
#include "kernels/numerics.h"

namespace pz_sdk {

std::size_t elementCount(const Dims& dims) {
  std::size_t n = 1;
  for (int d : dims) n *= static_cast<std::size_t>(d);
  return n;
}

const char* opKindName(OpKind kind) {
  static constexpr const char* kNames[] = {
#define PZ_SDK_OP_KIND_NAME(kind, name, prepare, kernel, work) name,
      PZ_SDK_OP_KINDS(PZ_SDK_OP_KIND_NAME)
#undef PZ_SDK_OP_KIND_NAME
  };
  return kNames[static_cast<int>(kind)];
}

OpDesc compiledCopy(const OpDesc& op) {
  OpDesc copy = op;
  for (TensorRef& t : copy.consts)
    if (t && t->bound) t->frozen = true;  // shared, not copied: see TensorImpl::frozen
  return copy;
}

std::size_t dtypeSize(cnmlDataType_t dtype) {
  switch (dtype) {
    case CNML_DATA_FLOAT16: return 2;
    case CNML_DATA_INT8: return 1;
    case CNML_DATA_UINT8: return 1;
    default: return 4;
  }
}

namespace {

// A bound const's description without its data.
TensorRef metadataOf(const TensorImpl& t) {
  auto meta = std::make_shared<TensorImpl>();
  meta->id = t.id;
  meta->type = t.type;
  meta->dims = t.dims;
  meta->shape_set = t.shape_set;
  meta->dtype = t.dtype;
  meta->bound = true;
  meta->quant = t.quant;
  meta->zero_pairs = t.zero_pairs;
  return meta;
}

}  // namespace

void ownBorrowedConsts(OpDesc& op) {
  for (TensorRef& t : op.consts) {
    if (!t) continue;
    if (TensorRef shared = t->owned_copy.lock()) {
      t = std::move(shared);
      continue;
    }
    if (!t->borrowed) continue;
    auto owned = std::make_shared<TensorImpl>(*t);
    owned->data.assign(t->borrowed, t->borrowed + elementCount(t->dims));
    owned->borrowed = nullptr;
    owned->source = t->borrowed;
    owned->frozen = false;
    owned->owned_copy.reset();
    t->owned_copy = owned;
    t = std::move(owned);
  }
}

OpDesc borrowingCopy(const OpDesc& op) {
  OpDesc copy = op;
  for (TensorRef& t : copy.consts) {
    if (!t || !t->source) continue;
    TensorRef meta = metadataOf(*t);
    meta->borrowed = t->source;
    meta->owned_copy = t;  // while alive (a const handed over, until released): not copied
    t = std::move(meta);
  }
  return copy;
}

void stripConstData(OpDesc& op) {
  for (TensorRef& t : op.consts) {
    if (!t || !t->bound) continue;
    t = metadataOf(*t);
  }
}

Precision precisionOf(const OpDesc& op) {
  if (op.int8) return Precision::kInt8;
  if (op.kind == OpKind::kCast) return Precision::kFp16;
  if (op.kind == OpKind::kGatherV2)  // its input is int32 indices: the table's dtype decides
    return op.outputs[0].dtype == CNML_DATA_FLOAT16 ? Precision::kFp16 : Precision::kFp32;
  return !op.inputs.empty() && op.inputs[0].dtype == CNML_DATA_FLOAT16 ? Precision::kFp16
                                                                       : Precision::kFp32;
}

namespace {

// Appends `n` values of a buffer handed over (the caller frees it right after) to `to`, as
// floats (`append(part, count)`), 16 MB of them at a time, giving each part's pages back to
// the system as it goes, so that a large filter is not resident twice while it moves
// (VGG's fc6: 411 MB). A buffer of one part moves whole and is left to the caller's free:
// pages given back from the heap fault in again, zeroed, on its next allocations, which
// cost a block's compile a third of its time when it binds many small filters.
template <typename T, typename Append>
void drainInto(std::vector<float>& to, const T* from, std::size_t n, Append append) {
  constexpr std::size_t kPart = (std::size_t{16} << 20) / sizeof(float);
  if (n <= kPart) {
    to.reserve(n);
    append(from, n);
    return;
  }
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto start = reinterpret_cast<std::uintptr_t>(from);
  std::uintptr_t given_back = (start + page - 1) & ~(page - 1);  // whole pages only
  to.reserve(n);
  for (std::size_t i = 0; i < n; i += kPart) {
    const std::size_t m = std::min(kPart, n - i);
    append(from + i, m);  // touches only the part's pages
    const std::uintptr_t copied = (start + (i + m) * sizeof(T)) & ~(page - 1);
    if (copied > given_back) {
      madvise(reinterpret_cast<void*>(given_back), copied - given_back, MADV_DONTNEED);
      given_back = copied;
    }
  }
}

}  // namespace

TensorRef givenCopy(const TensorImpl& t, float* data) {
  auto copy = std::make_shared<TensorImpl>(t);
  drainInto(copy->data, data, elementCount(t.dims), [&](const float* part, std::size_t m) {
    copy->data.insert(copy->data.end(), part, part + m);
  });
  copy->bound = true;
  copy->borrowed = nullptr;
  copy->source = copy->data.data();  // what a rebuild during the compile reads
  copy->frozen = false;
  copy->owned_copy.reset();
  copy->given.reset();
  return copy;
}

void decodeHalfDraining(std::vector<float>& to, const std::uint16_t* from, std::size_t n) {
  drainInto(to, from, n, [&](const std::uint16_t* part, std::size_t m) {
    const std::size_t at = to.size();
    to.resize(at + m);
    numerics::decodeHalf(part, to.data() + at, m, 1);
  });
}

TensorRef givenDecoded(TensorImpl& t) {
  std::vector<float> data = std::move(t.data);
  std::vector<std::int8_t> q = std::move(t.q);
  t.data.clear();
  t.q.clear();
  auto copy = std::make_shared<TensorImpl>(t);
  copy->data = std::move(data);
  copy->q = std::move(q);
  copy->bound = true;
  copy->frozen = false;
  copy->owned_copy.reset();
  copy->given.reset();
  return copy;
}

void releaseGiven(TensorImpl& t) {
  if (!t.given) return;
  t.given.reset();
  t.owned_copy.reset();
  t.spent = true;
}

bool constsBound(const OpDesc& op) {
  for (const TensorRef& t : op.consts)
    if (t && (!t->bound || t->spent)) return false;
  return true;
}

int threadsFor(int core_limit) { return std::max(1, std::min(core_limit, omp_get_num_procs())); }

namespace {
thread_local bool deferring = false;
}  // namespace

bool preparationDeferred() { return deferring; }
void setPreparationDeferred(bool on) { deferring = on; }

}  // namespace pz_sdk

cnmlBaseOp::cnmlBaseOp() = default;
cnmlBaseOp::~cnmlBaseOp() = default;

// fp16 and int8 ops on the oneDNN SDK, with the mock's arithmetic (sdk/kernels/numerics.h)
// kept wherever oneDNN allows it (docs/onednn.md states what differs).
//
// int8 Conv/ConvGroup/Mlp: oneDNN's int8 convolution / inner product (s8 x s8, exact s32
// sums) with per-output-channel weight scales f_c = numerics::rescaleFactor (so the
// primitive's rescale is float(acc) * f_c + bias_c, as the mock's), f32 dst and the chain's
// post-ops. The input is quantised here with the mock's rule (numerics.h 3: product in
// double, rint half to even, clamp to +-127, NaN -> 0), not by a oneDNN reorder, which
// multiplies in fp32 and saturates to -128. The f32 result is rounded to binary16 here.
// Only VNNI/AMX kernels are used: without them oneDNN pre-scales int8 weights by 1/2 (to
// avoid vpmaddubsw saturation), which changes the sums; such CPUs keep the mock's kernels.
//
// fp16 ops: oneDNN 3.2 has f16 primitives only on AVX512-FP16/AMX-FP16 CPUs, and its
// f16<->f32 reorders are the generic C++ ones, so a chain of fp16 ops is the fp32 path's
// primitive(s) between binary16 decoding and encoding done here (exact, round to nearest
// even: the mock's "fp32 kernel on decoded values, rounded once"); a conv head converts
// straight into and out of its f32 primitive's channels-last layout, as int8 ones do.
//
// In a fused chain the intermediate values stay fp32: the mock rounds each op's output to
// binary16, this rounds the chain's output once (bit-equal when the ops after the head are
// relu/clip, which commute with rounding).
//
// Here: the entry (makeReducedOp), the links between these ops, and the casts; the ops are
// half_op (fp16 chains) and converting_op (int8, and fp16 convolutions), over conversions.h.
#include "quantized.h"

#include <cstdint>
#include <memory>

#include "conversions.h"
#include "converting_op.h"
#include "half_op.h"

namespace pz_sdk {
namespace onednn {
namespace {

// Dense row-major (every dim longer than 1 strided as in the plain layout).
bool isDense(const memory::desc& md) {
  if (md.get_inner_nblks() != 0) return false;
  const memory::dims dims = md.get_dims(), strides = md.get_strides();
  memory::dim expect = 1;
  for (std::size_t i = dims.size(); i-- > 0;) {
    if (dims[i] > 1 && strides[i] != expect) return false;
    expect *= dims[i];
  }
  return true;
}

memory::desc plainF32(std::size_t n) {
  return memory::desc({static_cast<memory::dim>(n)}, DT::f32, Tag::a);
}

// The same fp32 values at the same places: equal descs, or both dense of one size.
bool sameBytes(const memory::desc& a, const memory::desc& b) {
  if (a == b) return true;
  return a.get_data_type() == b.get_data_type() && isDense(a) && isDense(b) &&
         a.get_size() == b.get_size();
}

}  // namespace

// The consumer's staging reads the producer's fp32 result where the layouts agree (both
// channels last, or both dense): one flat pass that rounds to binary16 (and quantises),
// instead of the producer's transposing encode and the consumer's transposing decode.
bool linkReduced(BackendOp& producer, int output, BackendOp& consumer, int input) {
  auto* conv = dynamic_cast<ConvertingOp*>(&producer);
  auto* half = dynamic_cast<HalfOp*>(&producer);
  if ((!conv && !half) || output != 0 || input < 0 ||
      (conv && (conv->dst_.route == Staged::kReorder || conv->variant_.requant != 0)))
    return false;
  const memory result = conv ? conv->dst_.inner : half->result();
  if (auto* to = dynamic_cast<HalfOp*>(&consumer)) {
    const std::size_t i = static_cast<std::size_t>(input);
    if (i >= to->in_sizes_.size() || to->from_[i]) return false;
    if (sameBytes(result.get_desc(), plainF32(to->in_sizes_[i]))) {
      to->from_[i] = static_cast<const float*>(result.get_data_handle());
      to->from_id_[i] = conv ? result.get() : nullptr;
    } else if (!to->readChannelsLast(result))
      return false;
    if (conv)
      conv->operand_reader_ = true;  // it reads the fp32 result
    else
      half->result_read_ = true;
    return true;
  }
  auto* to = dynamic_cast<ConvertingOp*>(&consumer);
  if (!to || static_cast<std::size_t>(input) > to->extra_.size()) return false;
  Staged& s = input == 0 ? to->src_ : to->extra_[input - 1];
  if (s.route == Staged::kReorder || s.from || s.shared) return false;
  const memory::desc want = s.inner.get_desc();
  if (!sameBytes(result.get_desc(), memory::desc(want.get_dims(), DT::f32, want.get_strides())))
    return false;
  if (input == 0 && to->int8_) {
    s.from = result;  // quantised in one flat pass at each run
    s.producer = conv ? result.get() : nullptr;
  } else {
    to->share(s, result, conv ? result.get() : nullptr);
  }
  if (!conv) {
    half->result_read_ = true;
    return true;
  }
  ConvertingOp* from = conv;
  if (input != 0) {
    from->operand_reader_ = true;
    return true;
  }
  from->readers_.push_back(to);
  if (from->nonneg_ && to->int8_ && s.route == Staged::kChannelsLast) to->unsignedSource();
  return true;
}

bool skipReducedDense(BackendOp& producer, int output) {
  if (output != 0) return false;
  if (auto* half = dynamic_cast<HalfOp*>(&producer)) {
    half->skipDense();
    return true;
  }
  auto* from = dynamic_cast<ConvertingOp*>(&producer);
  if (!from) return false;
  from->skip_dense_ = true;
  from->requantize();
  return true;
}

namespace {

// A binary16 <-> fp32 Cast (a reduced-precision block's edge): the vectorised conversions
// above, the mock's exact rounding (numerics.h 1).
class CastOp : public BackendOp {
 public:
  CastOp(bool encode, std::size_t n, int threads) : encode_(encode), n_(n), threads_(threads) {}
  std::string describe() const override {
    return encode_ ? "cast fp32 -> binary16 (vcvtps2ph)" : "cast binary16 -> fp32 (vcvtph2ps)";
  }
  void run(const void* const* inputs, void* const* outputs) override {
    if (encode_)
      encode(static_cast<const float*>(inputs[0]), static_cast<std::uint16_t*>(outputs[0]), n_,
             threads_);
    else
      decode(static_cast<const std::uint16_t*>(inputs[0]), static_cast<float*>(outputs[0]), n_,
             threads_);
  }

 private:
  bool encode_;
  std::size_t n_;
  int threads_;
};

std::unique_ptr<BackendOp> makeCast(const OpDesc& d, int threads) {
  if (d.cast != CNML_CAST_FLOAT32_TO_FLOAT16 && d.cast != CNML_CAST_FLOAT16_TO_FLOAT32)
    return nullptr;
  return std::make_unique<CastOp>(d.cast == CNML_CAST_FLOAT32_TO_FLOAT16,
                                  d.inputs[0].elements(), threads);
}

}  // namespace

std::unique_ptr<BackendOp> makeReducedOp(const std::vector<const OpDesc*>& chain, int threads,
                                         const FloatPath& fp32) {
  ThreadScope scope(threads);
  if (chain.size() == 1 && chain.front()->kind == OpKind::kCast)
    return makeCast(*chain.front(), threads);
  try {
    return chain.front()->int8 ? makeInt8(chain, threads, fp32) : makeHalf(chain, threads, fp32);
  } catch (const dnnl::error&) {
    return nullptr;  // no oneDNN implementation for this shape: the mock's kernels
  }
}

}  // namespace onednn
}  // namespace pz_sdk

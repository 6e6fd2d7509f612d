// A convolution or inner product between binary16 buffers (ConvertingOp): int8's oneDNN
// int8 primitives, and fp16 convolutions whose f32 primitive takes channels last.
#ifndef PZ_ONEDNN_CONVERTING_OP_H_
#define PZ_ONEDNN_CONVERTING_OP_H_

#include <cstdint>
#include <cstring>
#include <functional>
#include <unordered_map>
#include <utility>

#include "backend_op.h"
#include "conversions.h"
#include "kernels/numerics.h"
#include "quantized.h"
#include "reduced_chain.h"
#include "kernels/workspace.h"

namespace pz_sdk {
namespace onednn {

// A dense user buffer (the caller's, converted) bound to a primitive argument: directly
// when the primitive took the dense layout, converted straight into channels-last, or
// through a oneDNN reorder for any other layout.
struct Staged {
  enum Route { kDirect, kChannelsLast, kReorder };
  memory user, inner;
  dnnl::reorder reorder;
  Route route = kDirect;
  Planes planes{};
  // A linked producer's fp32 result in the layout of `inner` (backendLink): read in place
  // of the caller's binary16 buffer. Empty when not linked.
  memory from;
  // `inner` is a linked producer's result as this argument takes it (its fp32 value, or
  // the int8 codes a requantising producer writes): nothing to convert.
  bool shared = false;
  // What `from` or `inner` share: a converting producer's result, whose memory's identity
  // names it in a fusion's arena (BackendOp::Held). Null otherwise.
  const void* producer = nullptr;
  // Its buffers come from the thread's workspace at each run (place()): no other op reads
  // them.
  bool transient = false;
  int arg = DNNL_ARG_SRC;
  // A null `handle`: transient.
  void bind(const memory::desc& user_md, void* handle, const memory::desc& prim_md,
            bool input) {
    transient = handle == nullptr;
    user = memory(user_md, cpuEngine(), handle);
    inner = user;
    if (user_md == prim_md) return;
    inner = transient ? memory(prim_md, cpuEngine(), nullptr) : memory(prim_md, cpuEngine());
    const memory::dims d = user_md.get_dims();
    if (d.size() == 4 && prim_md == memory::desc(d, prim_md.get_data_type(), Tag::acdb)) {
      route = kChannelsLast;
      planes = {d[0], d[1], d[2] * d[3]};
      return;
    }
    route = kReorder;
    reorder = input ? dnnl::reorder(user, inner) : dnnl::reorder(inner, user);
  }
  template <typename T>
  T* innerData() const {
    return static_cast<T*>(inner.get_data_handle());
  }

  // Makes its own buffers transient (the op's result, once no link reads it).
  void release() {
    transient = true;
    const bool same = inner.get() == user.get();
    user = memory(user.get_desc(), cpuEngine(), nullptr);
    inner = same ? user : memory(inner.get_desc(), cpuEngine(), nullptr);
  }
  // What place() takes: the dense buffer unless the route converts straight into the
  // primitive's channels-last layout, and the primitive's when it is another.
  std::size_t transientFloats() const {
    if (!transient || shared) return 0;
    std::size_t n = 0;
    if (route != kChannelsLast) n += lineFloats(floatsOf(user));
    if (route != kDirect) n += lineFloats(floatsOf(inner));
    return n;
  }
  float* place(float* at) {
    if (!transient || shared) return at;
    if (route != kChannelsLast) {
      user.set_data_handle(at);  // and inner, the same memory, on the direct route
      at += lineFloats(floatsOf(user));
    }
    if (route != kDirect) {
      inner.set_data_handle(at);
      at += lineFloats(floatsOf(inner));
    }
    return at;
  }
  static std::size_t floatsOf(const memory& m) { return (m.get_desc().get_size() + 3) / 4; }
};

// How an int8 conv is built for its links: writing the int8 codes of readers that quantise
// with step inverse `requant` (0: its fp32 result), from an unsigned source (`u8`: a value
// that is never negative).
struct Variant {
  double requant = 0.0;
  bool u8 = false;
};

// A convolution or inner product between binary16 buffers: an int8 op's input quantised
// (s8 source), an fp16 op's decoded (f32 source), both straight into the primitive's
// layout when it is channels-last; the f32 result rounded to binary16.
class ConvertingOp : public BackendOp {
 public:
  ConvertingOp(int threads, bool int8) : threads_(threads), int8_(int8), stream_(cpuEngine()) {}

  std::string describe() const override {
    return (int8_ ? "int8 " : "fp16 ") + primitiveName(prim_);
  }
  // Drops its copies of the chain's weights, and stages the result in the thread's workspace
  // unless a link reads it.
  void settle() override {
    rebuild_ = nullptr;
    if (readers_.empty() && !operand_reader_) stageResult();
  }
  // In a fusion, a result that links read lives in the fusion's arena (from this step to
  // its last reader), as do the values it reads from converting producers.
  std::vector<Held> settleInFusion() override {
    rebuild_ = nullptr;
    std::vector<Held> held;
    if (readers_.empty() && !operand_reader_) {
      stageResult();
    } else {
      held.push_back({dst_.inner.get(), dst_.inner.get_desc().get_size()});
      dst_.inner.set_data_handle(nullptr);  // frees what oneDNN allocated for it
      dst_own_ = AlignedBuffer();
    }
    for (const Staged* s : staged())
      if (s->producer)
        held.push_back({s->producer, (s->from ? s->from : s->inner).get_desc().get_size()});
    return held;
  }
  void placeHeld(const void* id, void* at) override {
    if (dst_.inner.get() == id) dst_.inner.set_data_handle(at);
    for (Staged* s : staged())
      if (s->shared && s->producer == id) s->inner.set_data_handle(at);
  }
  bool rebuiltAsProducer() const override { return int8_; }  // requantize()
  void dropRebuild() override { rebuild_ = nullptr; }

  void run(const void* const* inputs, void* const* outputs) override;

  void stageResult() {
    if (dst_.transient) return;
    dst_.release();
    args_[DNNL_ARG_DST] = dst_.inner;
    dst_own_ = AlignedBuffer();
  }
  std::vector<Staged*> staged() {
    std::vector<Staged*> all{&src_};
    for (Staged& s : extra_) all.push_back(&s);
    return all;
  }

  // The staging buffers no link reads, one after another in the thread's workspace.
  void placeStaging() {
    std::size_t floats = src_.transientFloats() + dst_.transientFloats();
    for (const Staged& s : extra_) floats += s.transientFloats();
    if (floats == 0) return;
    float* at = src_.place(threadWorkspace(floats));
    for (Staged& s : extra_) at = s.place(at);
    dst_.place(at);
  }

  int threads_;
  bool int8_;
  dnnl::stream stream_;
  dnnl::primitive prim_;
  std::unordered_map<int, memory> args_;
  double step_inverse_ = 1.0;
  AlignedBuffer dst_own_;  // the dense fp32 result while a link may read it
  std::size_t dst_floats_ = 0;
  Staged src_, dst_;
  std::vector<Staged> extra_;
  // Every reader of the result was linked and nothing outside the fusion reads it
  // (backendSkipDense): the binary16 output is not written.
  bool skip_dense_ = false;
  // The ops whose input 0 reads the result through a link (linkReduced), and whether an op
  // reads it as another input (a post-op operand: it needs the fp32 result).
  std::vector<ConvertingOp*> readers_;
  bool operand_reader_ = false;
  // How it was built (int8 convolutions), whether its chain ends in a relu (no negative
  // result), and the same chain built another way (null when it cannot be).
  Variant variant_;
  bool nonneg_ = false;
  std::function<std::unique_ptr<ConvertingOp>(const Variant&)> rebuild_;

  // Rebuilt as `v` says, keeping its links; false, unchanged, when oneDNN has no kernel.
  bool become(const Variant& v) {
    if (!rebuild_) return false;
    std::unique_ptr<ConvertingOp> re = rebuild_(v);
    if (!re) return false;
    re->adoptLinks(*this);
    *this = std::move(*re);
    return true;
  }

  // When every reader is an int8 op quantising the value with the same step, the op writes
  // their int8 codes itself (oneDNN's output scale and saturation, a clip to -127 as the
  // mock's): no fp32 result, no conversion pass. The codes skip the binary16 rounding in
  // between, so they may differ from the mock's by one where the fp32 value lies within
  // half a binary16 step of a rounding tie (docs/onednn.md).
  void requantize() {
    if (!int8_ || readers_.empty() || operand_reader_) return;
    const double k = readers_.front()->step_inverse_;
    for (const ConvertingOp* r : readers_)
      if (!r->int8_ || r->step_inverse_ != k || r->src_.route != Staged::kChannelsLast) return;
    Variant v = variant_;
    v.requant = k;
    if (!become(v)) return;
    for (ConvertingOp* r : readers_) r->share(r->src_, dst_.inner, dst_.inner.get());
    if (nonneg_)
      for (ConvertingOp* r : readers_) r->unsignedSource();
  }

  // Codes of a value that is never negative are the same bytes as u8 (0..127): oneDNN's
  // u8 x s8 kernels skip the shift and compensation that signed sources need.
  void unsignedSource() {
    if (variant_.u8) return;
    Variant v = variant_;
    v.u8 = true;
    become(v);
  }

  // Keeps the links `old` (this op built another way) had.
  void adoptLinks(const ConvertingOp& old) {
    if (old.src_.shared) share(src_, old.src_.inner, old.src_.producer);
    src_.from = old.src_.from;
    if (!old.src_.shared) src_.producer = old.src_.producer;
    for (std::size_t i = 0; i < extra_.size() && i < old.extra_.size(); ++i)
      if (old.extra_[i].shared) share(extra_[i], old.extra_[i].inner, old.extra_[i].producer);
    readers_ = old.readers_;
    operand_reader_ = old.operand_reader_;
    rebuild_ = old.rebuild_;
    skip_dense_ = skip_dense_ || old.skip_dense_;
  }

  // The argument reads `value`'s bytes (a linked producer's), seen with its own desc (s8
  // or u8 codes; fp32).
  // `producer`: the value's Held id when a converting producer's result.
  void share(Staged& s, const memory& value, const void* producer) {
    s.inner = memory(s.inner.get_desc(), cpuEngine(), value.get_data_handle());
    s.from = memory();
    s.shared = true;
    s.producer = producer;
    args_[s.arg] = s.inner;
  }

  // Converts the binary16 input `in` into the argument's memory (unless it is shared).
  template <typename Out, typename Row>
  void stage(Staged& s, const std::uint16_t* in, Row row) {
    if (s.shared) return;
    Out* dense_buf = static_cast<Out*>(s.user.get_data_handle());
    if (s.route == Staged::kChannelsLast) {
      toChannelsLast(in, s.innerData<Out>(), s.planes, threads_, row);
      return;
    }
    convertDense(in, dense_buf, s.user.get_desc().get_size() / sizeof(Out), threads_, row);
    if (s.route == Staged::kReorder) s.reorder.execute(stream_, s.user, s.inner);
  }

  void setConst(int arg, const memory::desc& user_md, const void* data,
                const memory::desc& prim_md) {
    memory user(user_md, cpuEngine());
    std::memcpy(user.get_data_handle(), data, user_md.get_size());
    args_[arg] = inLayout(user, prim_md, stream_);
  }

  // The head's input, output and weights (`weights_user`: s8 from the filter's q values, or
  // f32), bias (int8: always, 0 without one, as the mock's rescale adds it), int8's
  // per-channel rescale factors, and the post-ops' operands.
  template <typename PD>
  void bind(const OpDesc& d, const PD& pd, const memory::desc& src_user,
            const memory::desc& dst_user, const memory::desc& weights_user,
            const ChainPostOps& post) {
    src_.bind(src_user, nullptr, pd.src_desc(), true);
    args_[DNNL_ARG_SRC] = src_.inner;
    const int channels = d.consts[0]->dims[0];
    const memory::desc vec({channels}, DT::f32, Tag::a);
    const bool has_bias = d.consts.size() > 1 && d.consts[1];
    if (int8_) {
      step_inverse_ = numerics::stepInverse(d.in_position, d.in_scale);
      setConst(DNNL_ARG_WEIGHTS, weights_user, d.consts[0]->q.data(), pd.weights_desc());
      const TensorQuant& q = d.consts[0]->quant;
      std::vector<float> factors(channels), bias(channels, 0.0f);
      for (int c = 0; c < channels; ++c)
        factors[c] = numerics::rescaleFactor(d.in_position, d.in_scale,
                                             q.positions.empty() ? q.position : q.positions[c],
                                             q.scales.empty() ? q.scale : q.scales[c]);
      setConst(DNNL_ARG_ATTR_SCALES | DNNL_ARG_WEIGHTS, vec, factors.data(), vec);
      if (has_bias) bias = d.consts[1]->data;
      setConst(DNNL_ARG_BIAS, vec, bias.data(), vec);
    } else {
      setConst(DNNL_ARG_WEIGHTS, weights_user, d.consts[0]->data.data(), pd.weights_desc());
      if (has_bias) setConst(DNNL_ARG_BIAS, vec, d.consts[1]->data.data(), vec);
    }
    for (const ChainPostOps::Operand& o : post.operands) {
      const int arg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(o.index) | DNNL_ARG_SRC_1;
      if (o.data) {
        setConst(arg, o.md, o.data->data(), o.md);
        continue;
      }
      extra_.emplace_back();
      extra_.back().bind(o.user, nullptr, o.md, true);
      extra_.back().arg = arg;
      args_[arg] = extra_.back().inner;
    }
    dst_floats_ = (dst_user.get_size() + sizeof(float) - 1) / sizeof(float);
    dst_own_ = AlignedBuffer(dst_floats_);
    dst_.bind(dst_user, dst_own_.data(), pd.dst_desc(), false);
    args_[DNNL_ARG_DST] = dst_.inner;
  }
};

// An int8 conv, or an fp16 one (f32 primitive) whose primitive takes channels-last
// operands; null otherwise (an fp16 conv then runs as HalfOp). `v`: an int8 conv built
// for its links (ConvertingOp::requantize).
std::unique_ptr<ConvertingOp> makeConvertingConv(const OpDesc& d,
                                                 const std::vector<const OpDesc*>& chain,
                                                 int threads, const FloatPath& fp32, bool int8,
                                                 const Variant& v = Variant());

// The op of a chain whose head is an int8 Conv, ConvGroup or Mlp; null where oneDNN has no
// exact int8 kernel for it (the mock's kernels compute).
std::unique_ptr<BackendOp> makeInt8(const std::vector<const OpDesc*>& chain, int threads,
                                    const FloatPath& fp32);

}  // namespace onednn
}  // namespace pz_sdk

#endif  // PZ_ONEDNN_CONVERTING_OP_H_

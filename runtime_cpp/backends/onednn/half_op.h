// An fp16 chain as the fp32 path's primitive(s) between exact binary16 conversions
// (HalfOp), and how a chain of fp16 ops becomes one (makeHalf).
#ifndef PZ_ONEDNN_HALF_OP_H_
#define PZ_ONEDNN_HALF_OP_H_

#include <utility>

#include "backend_op.h"
#include "quantized.h"
#include "reduced_chain.h"

namespace pz_sdk {
namespace onednn {

// Its decoded inputs, and its fp32 result unless a link reads that, are staged in the
// thread's workspace at each run (level 1: inner_ takes level 0 for its own buffers), so that
// a session holds the largest op's instead of every op's.
class HalfOp : public BackendOp {
 public:
  HalfOp(std::unique_ptr<BackendOp> inner, const std::vector<std::size_t>& in_sizes,
         std::size_t out_size, int threads)
      : inner_(std::move(inner)),
        in_sizes_(in_sizes),
        out_size_(out_size),
        out_own_(out_size),
        threads_(threads) {
    from_.assign(in_sizes_.size(), nullptr);
    from_id_.assign(in_sizes_.size(), nullptr);
  }

  std::string describe() const override { return "fp16 via " + inner_->describe(); }
  // The chain's records (its consts in fp32) only serve a rebuild that reads channels-last.
  void settle() override {
    chain_.reset();
    inner_->settle();
    if (!result_read_) out_own_ = AlignedBuffer();
  }
  // In a fusion, the values it reads from a converting producer (from_, or its inner op's
  // link) are placed in the fusion's arena with that producer's result.
  std::vector<Held> settleInFusion() override {
    chain_.reset();
    std::vector<Held> held = inner_->settleInFusion();
    if (!result_read_) out_own_ = AlignedBuffer();
    for (std::size_t i = 0; i < from_id_.size(); ++i)
      if (from_id_[i]) held.push_back({from_id_[i], in_sizes_[i] * sizeof(float)});
    return held;
  }
  void placeHeld(const void* id, void* at) override {
    inner_->placeHeld(id, at);
    for (std::size_t i = 0; i < from_id_.size(); ++i)
      if (from_id_[i] == id) from_[i] = static_cast<const float*>(at);
  }
  void dropRebuild() override {
    chain_.reset();
    inner_->dropRebuild();
  }

  void run(const void* const* inputs, void* const* outputs) override;

  // The fp32 result before its rounding to binary16 (linkReduced): dense, or channels
  // last when the op was rebuilt over its producer's channels last.
  memory result() {
    if (cl_) {
      const memory inner = fp32_.inner_output(*inner_, 0, false);
      if (inner) return inner;
    }
    const memory::desc md({static_cast<memory::dim>(out_size_)}, DT::f32, Tag::a);
    return memory(md, cpuEngine(), out_own_.data());
  }

  // A one-input layout-agnostic chain (pooling, element-wise, ...) whose producer hands
  // over channels last: rebuilt over channels last, it reads that value in place (no
  // transposing encode and decode around it). False, unchanged, otherwise.
  bool readChannelsLast(const memory& value) {
    if (cl_ || in_sizes_.size() != 1 || !chain_) return false;
    ThreadScope scope(threads_);
    std::unique_ptr<BackendOp> re;
    try {
      re = fp32_.make(pointers(*chain_), threads_, true);
    } catch (const dnnl::error&) {
      return false;
    }
    if (!re || !fp32_.read_input(*re, 0, value)) return false;
    inner_ = std::move(re);
    cl_ = true;
    from_[0] = static_cast<const float*>(value.get_data_handle());
    return true;
  }

  void skipDense() {
    skip_dense_ = true;
    if (cl_) fp32_.inner_output(*inner_, 0, true);
  }

  std::unique_ptr<BackendOp> inner_;
  std::vector<std::size_t> in_sizes_;
  std::size_t out_size_;
  AlignedBuffer out_own_;  // the fp32 result while a link may read it (result())
  int threads_;
  // Inputs read from a linked producer's dense fp32 result (null: the caller's binary16),
  // whether the binary16 output is skipped (backendSkipDense), and whether a link reads the
  // fp32 result.
  std::vector<const float*> from_;
  std::vector<const void*> from_id_;  // per input: a converting producer's result (Held id)
  bool skip_dense_ = false;
  bool result_read_ = false;
  // The chain (FLOAT32 copies) and the fp32 path, to rebuild it over channels last.
  std::shared_ptr<const std::vector<OpDesc>> chain_;
  FloatPath fp32_;
  bool cl_ = false;
};

// A conv head converts its own operands (channels-last, below); other chains are the fp32
// path's primitive(s) between dense conversions.
std::unique_ptr<BackendOp> makeHalf(const std::vector<const OpDesc*>& chain, int threads,
                                    const FloatPath& fp32);

}  // namespace onednn
}  // namespace pz_sdk

#endif  // PZ_ONEDNN_HALF_OP_H_

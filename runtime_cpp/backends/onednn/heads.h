// Each op kind's primitive as a DnnlOp, by family (heads_*.cpp): what backend.cpp's dispatch
// (makeHead) calls for a chain's first op. Each returns null where oneDNN has no primitive
// that computes the op as the mock does, and throws dnnl::error where it has no
// implementation for the shape; the mock's kernels then compute.
#ifndef PZ_ONEDNN_HEADS_H_
#define PZ_ONEDNN_HEADS_H_

#include <memory>
#include <vector>

#include "dnnl_op.h"
#include "post_ops.h"

namespace pz_sdk {
namespace onednn {

// heads_conv_gemm.cpp. `chain`: the head and the ops after it (as post-ops, or folded into
// the filter); `over`: the chain input (op input index) whose residual add accumulates in
// place.
std::unique_ptr<DnnlOp> makeConv(const OpDesc& d, const std::vector<const OpDesc*>& chain,
                                 int threads, int over = -1);
std::unique_ptr<DnnlOp> makeMlp(const OpDesc& d, const std::vector<const OpDesc*>& chain,
                                int threads);
std::unique_ptr<DnnlOp> makeDeconv(const OpDesc& d, int threads);
std::unique_ptr<DnnlOp> makeBatchDot(const OpDesc& d, int threads);

// heads_pool_resample.cpp. `cl`: over channels-last activations.
std::unique_ptr<DnnlOp> makePool(const OpDesc& d, const PostOps& post, int threads, bool cl);
std::unique_ptr<DnnlOp> makeResample(const OpDesc& d, const PostOps& post, int threads,
                                     bool cl);
std::unique_ptr<DnnlOp> makeLrn(const OpDesc& d, int threads);

// heads_elementwise.cpp. `gate`: the head starts a gate (gateAt) that one eltwise computes.
std::unique_ptr<DnnlOp> makeEltwise(const OpDesc& d, const PostOps& post, int threads,
                                    bool cl, const Eltwise* gate = nullptr);
std::unique_ptr<DnnlOp> makeBinary(const OpDesc& d, const PostOps& post, int threads,
                                   bool cl);
std::unique_ptr<DnnlOp> makePrelu(const OpDesc& d, int threads);
std::unique_ptr<DnnlOp> makeSoftmax(const OpDesc& d, int threads);
std::unique_ptr<DnnlOp> makeLayerNorm(const OpDesc& d, int threads);

// heads_layout.cpp.
// The chain of Reshape and Transpose ops as views: its input's memory seen in the dims
// where the two sides meet (`src`), and its output's (`dst`), so that one reorder moves
// the data. `in_md` / `out_md`: the layouts of the chain's input and output. False when a
// reshape needs a copy on both sides.
bool layoutViews(const std::vector<const OpDesc*>& chain, const memory::desc& in_md,
                 const memory::desc& out_md, memory::desc* src, memory::desc* dst);
std::unique_ptr<DnnlOp> makeLayoutChain(const std::vector<const OpDesc*>& chain, int threads,
                                        bool cl);
std::unique_ptr<DnnlOp> makeSlice(const OpDesc& d, int threads, bool cl);
std::unique_ptr<DnnlOp> makeConcat(const OpDesc& d, int threads, bool cl);

// heads_recurrent.cpp. rnnPrimitive throws dnnl::error for a cell oneDNN does not compute.
dnnl::primitive_desc rnnPrimitive(const OpDesc& d);
std::unique_ptr<DnnlOp> makeRnn(const OpDesc& d, int threads);

}  // namespace onednn
}  // namespace pz_sdk

#endif  // PZ_ONEDNN_HEADS_H_

// Layers in the SDK's sparse mode (CNML_Sparse) computed by the oneDNN SDK itself: oneDNN
// 3.2 has CSR only as a matmul source, and as weights only in its reference kernel. The
// filter is kept as pairs of output rows (2i, 2i+1, the pairs the mode skips): per pair, the
// input columns where either row is non-zero, with both rows' values there.
// - A fully connected layer reads 12 bytes per kept column of a pair instead of 8 per
//   column, gathering the input at those columns: it pays at small batches where most pairs
//   are zero.
// - A 1x1 convolution (stride 1, no pads, one group) compiled alone accumulates each kept
//   channel's input plane into both rows' output planes: two multiply-adds per kept weight
//   and output element, none for a zero pair.
// Where a kernel was measured slower than oneDNN's dense one (sparse.cpp), the layer runs
// that instead.
#ifndef PZ_ONEDNN_SPARSE_H_
#define PZ_ONEDNN_SPARSE_H_

#include <memory>
#include <vector>

#include "core/compute_backend.h"

namespace pz_sdk {
namespace onednn {

// Whether `head` (an fp32 sparse Mlp or Conv with its filter bound) runs on a sparse kernel,
// alone: a fusion leaves its post-ops apart.
bool sparseTakes(const OpDesc& head);
// The op for `chain` (null when no sparse kernel takes it); `threads` split the work.
std::unique_ptr<BackendOp> makeSparseOp(const std::vector<const OpDesc*>& chain, int threads);

}  // namespace onednn
}  // namespace pz_sdk

#endif  // PZ_ONEDNN_SPARSE_H_

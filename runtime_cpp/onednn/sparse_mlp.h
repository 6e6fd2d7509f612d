// A fully connected op in the SDK's sparse mode (CNML_Sparse) computed by the oneDNN SDK
// itself: oneDNN 3.2 has CSR only as a matmul source, and as weights only in its reference
// kernel. The filter is kept as pairs of output rows (2i, 2i+1, the pairs the mode skips):
// per pair, the input columns where either row is non-zero, with both rows' values there.
// A forward reads 12 bytes per kept column of a pair instead of 8 per column, so it pays
// at small batches where most pairs are zero; another layer runs oneDNN's dense kernel.
#ifndef PZ_ONEDNN_SPARSE_MLP_H_
#define PZ_ONEDNN_SPARSE_MLP_H_

#include <memory>

#include "backend.h"

namespace pz_mock {
namespace onednn {

// Whether `d` (an fp32 Mlp created with CNML_Sparse, its filter bound) runs on the sparse
// kernel: where its zero pairs and batch make it faster than oneDNN's (sparse_mlp.cpp).
bool sparseMlpTakes(const OpDesc& d);
// The op (null when sparseMlpTakes is false); `threads` split the pairs.
std::unique_ptr<BackendOp> makeSparseMlp(const OpDesc& d, int threads);

}  // namespace onednn
}  // namespace pz_mock

#endif  // PZ_ONEDNN_SPARSE_MLP_H_

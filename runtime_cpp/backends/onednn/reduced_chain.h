// What the fp16 and int8 ops (half_op, converting_op, quantized.cpp) share: dense
// descriptors, and a reduced-precision chain seen as the fp32 path's FLOAT32 ops.
#ifndef PZ_ONEDNN_REDUCED_CHAIN_H_
#define PZ_ONEDNN_REDUCED_CHAIN_H_

#include <cstddef>
#include <dnnl.hpp>
#include <vector>

#include "core/compute_backend.h"

namespace pz_sdk {
namespace onednn {

dnnl::memory::desc dense(const Dims& dims, dnnl::memory::data_type dt);

// Whether the chain's last op leaves no negative value (relu and its clipped forms).
bool endsNonNegative(const std::vector<const OpDesc*>& chain);

// The chain as FLOAT32 ops for the fp32 path (consts already hold their decoded values).
std::vector<OpDesc> asFloat(const std::vector<const OpDesc*>& chain);

std::vector<const OpDesc*> pointers(const std::vector<OpDesc>& ops);

// The chain's inputs as compute_backend.h orders them: the head's, then each later op's
// inputs that the chain does not compute itself.
std::vector<std::size_t> chainInputSizes(const std::vector<const OpDesc*>& chain);

}  // namespace onednn
}  // namespace pz_sdk

#endif  // PZ_ONEDNN_REDUCED_CHAIN_H_

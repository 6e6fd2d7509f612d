// What the headers of the compiled ops (DnnlOp, HalfOp, ConvertingOp) build on: the
// BackendOp they implement, the engine and helpers of common.h, the aligned buffers they
// hold, and oneDNN's memory types under the short names their code uses.
#ifndef PZ_ONEDNN_BACKEND_OP_H_
#define PZ_ONEDNN_BACKEND_OP_H_

#include <cstddef>
#include <dnnl.hpp>
#include <memory>
#include <string>
#include <vector>

#include "kernels/aligned_buffer.h"
#include "core/compute_backend.h"
#include "common.h"

namespace pz_sdk {
namespace onednn {

using dnnl::memory;
using Tag = memory::format_tag;
using DT = memory::data_type;

}  // namespace onednn
}  // namespace pz_sdk

#endif  // PZ_ONEDNN_BACKEND_OP_H_

// The shared helpers of reduced_chain.h.
#include "reduced_chain.h"

namespace pz_sdk {
namespace onednn {

using dnnl::memory;

memory::desc dense(const Dims& dims, memory::data_type dt) {
  memory::dims d(dims.begin(), dims.end());
  memory::dims strides(d.size(), 1);
  for (std::size_t i = d.size(); i-- > 1;) strides[i - 1] = strides[i] * d[i];
  return memory::desc(d, dt, strides);
}

bool endsNonNegative(const std::vector<const OpDesc*>& chain) {
  const OpDesc& d = *chain.back();
  return d.kind == OpKind::kActive &&
         (d.active == CNML_ACTIVE_RELU || d.active == CNML_ACTIVE_RELU6 ||
          d.active == CNML_ACTIVE_RELU1);
}

std::vector<OpDesc> asFloat(const std::vector<const OpDesc*>& chain) {
  std::vector<OpDesc> ops;
  for (const OpDesc* d : chain) {
    ops.push_back(*d);
    for (Operand& o : ops.back().inputs) o.dtype = CNML_DATA_FLOAT32;
    for (Operand& o : ops.back().outputs) o.dtype = CNML_DATA_FLOAT32;
  }
  return ops;
}

std::vector<const OpDesc*> pointers(const std::vector<OpDesc>& ops) {
  std::vector<const OpDesc*> p;
  for (const OpDesc& d : ops) p.push_back(&d);
  return p;
}

std::vector<std::size_t> chainInputSizes(const std::vector<const OpDesc*>& chain) {
  std::vector<std::size_t> sizes;
  for (const Operand& o : chain.front()->inputs) sizes.push_back(o.elements());
  for (std::size_t k = 1; k < chain.size(); ++k)
    for (const Operand& o : chain[k]->inputs) {
      bool inside = false;
      for (std::size_t m = 0; m < k; ++m) inside |= o.id == chain[m]->outputs[0].id;
      if (!inside) sizes.push_back(o.elements());
    }
  return sizes;
}

}  // namespace onednn
}  // namespace pz_sdk

#include "op_cost.h"

#include <algorithm>
#include <set>

namespace pz_mock {
namespace {

double bytesOf(const std::vector<Operand>& ops) {
  double b = 0.0;
  for (const Operand& o : ops) b += static_cast<double>(o.bytes());
  return b;
}

// Batch x channels: how element-wise work is dealt out to cores.
long long planeCount(const Dims& d) {
  return d.size() >= 2 ? static_cast<long long>(d[0]) * d[1] : d[0];
}

}  // namespace

const DeviceProfile& mockProfile() {
  static const DeviceProfile profile;
  return profile;
}

LayerWork layerWorkOf(const OpDesc& op) {
  LayerWork w;
  w.input_bytes = bytesOf(op.inputs);
  w.output_bytes = bytesOf(op.outputs);
  for (const TensorRef& t : op.consts)
    if (t) w.weight_bytes += static_cast<double>(elementCount(t->dims)) * sizeof(float);
  const Dims& in = op.inputs[0].dims;
  const Dims& out = op.outputs[0].dims;
  const double out_elems = static_cast<double>(op.outputs[0].elements());
  w.parallel_extent = planeCount(out);
  switch (op.kind) {
    case OpKind::kConv:
    case OpKind::kConvGroup: {
      const Dims& f = op.consts[0]->dims;
      w.flops = 2.0 * out_elems * f[1] * f[2] * f[3];
      w.parallel_extent = out[1];
      w.kernel_h = f[2];
      w.out_height = out[2];
      break;
    }
    case OpKind::kMlp: {
      double k = static_cast<double>(op.inputs[0].elements()) / in[0];
      w.flops = 2.0 * out_elems * k;
      w.parallel_extent = out[1];
      break;
    }
    case OpKind::kPool:
      w.flops = out_elems * op.pool.kh * op.pool.kw;
      w.kernel_h = op.pool.kh;
      w.out_height = out[2];
      break;
    case OpKind::kLrn: w.flops = out_elems * (2.0 * op.lrn.size + 4.0); break;
    case OpKind::kSoftmax: w.flops = 4.0 * out_elems; break;
    case OpKind::kActive:
    case OpKind::kBatchNorm:
    case OpKind::kScale:
    case OpKind::kAdd: w.flops = 2.0 * out_elems; break;
    case OpKind::kConcat:
    case OpKind::kReshape:
    case OpKind::kTranspose: w.flops = 0.0; break;  // pure data movement
  }
  return w;
}

FusionWork fusionWorkOf(const std::vector<OpDesc>& ops, const std::vector<Operand>& io) {
  FusionWork f;
  std::set<std::uint64_t> io_ids;
  for (const Operand& o : io) {
    io_ids.insert(o.id);
    f.io_bytes += static_cast<double>(o.bytes());
  }
  for (const OpDesc& op : ops) {
    f.layers.push_back(layerWorkOf(op));
    for (const Operand& o : op.outputs)
      if (!io_ids.count(o.id)) f.intermediate_bytes += static_cast<double>(o.bytes());
  }
  return f;
}

}  // namespace pz_mock

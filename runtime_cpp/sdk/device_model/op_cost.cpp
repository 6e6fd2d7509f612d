#include "op_cost.h"

#include <algorithm>
#include <map>
#include <set>

namespace pz_sdk {
namespace {

// How one op is priced: its precision and the byte size of its activations and consts.
struct Pricing {
  Precision precision = Precision::kFp32;
  PrecisionOverride as = PrecisionOverride::kAsBuilt;
  bool int8_filter = false;  // const 0 is an int8 filter (priced at 1 byte)

  double activation(const Operand& o) const {
    if (as == PrecisionOverride::kAsBuilt) return static_cast<double>(dtypeSize(o.dtype));
    return as == PrecisionOverride::kFp32 ? 4.0 : 2.0;
  }
  double constant(const TensorImpl& t, std::size_t index) const {
    if (as == PrecisionOverride::kAsBuilt) return static_cast<double>(dtypeSize(t.dtype));
    if (as == PrecisionOverride::kFp32) return 4.0;
    return index == 0 && int8_filter ? 1.0 : 2.0;
  }
};

// A sparse op (CNML_Sparse) skips its filter's zero pairs: their multiply-adds, at the
// profile's sparse_skip_efficiency, and their bytes, while the filter carries an index of
// sparse_index_bits per pair. Without zero pairs the index only costs.
void priceSparse(LayerWork& w, const OpDesc& op, const Pricing& pr) {
  const TensorImpl& filter = *op.consts[0];
  const DeviceProfile& profile = currentProfile();
  const double zero = std::max(0.0, filter.zero_pairs);
  const double elements = static_cast<double>(elementCount(filter.dims));
  const double pairs = filter.dims.empty() ? 0.0 : elements / filter.dims[0] * (filter.dims[0] / 2);
  w.flops *= 1.0 - profile.sparse_skip_efficiency * zero * (2.0 * pairs / elements);
  w.weight_bytes -= 2.0 * pairs * zero * pr.constant(filter, 0);
  w.weight_bytes += pairs * profile.sparse_index_bits / 8.0;
}

bool hasInt8Mode(OpKind kind) {
  return kind == OpKind::kConv || kind == OpKind::kConvGroup || kind == OpKind::kMlp;
}

Pricing pricingOf(const OpDesc& op, PrecisionOverride as) {
  Pricing p;
  if (op.kind == OpKind::kCast || op.kind == OpKind::kHostTransfer) as = PrecisionOverride::kAsBuilt;
  p.as = as;
  switch (as) {
    case PrecisionOverride::kAsBuilt: p.precision = precisionOf(op); break;
    case PrecisionOverride::kFp32: p.precision = Precision::kFp32; break;
    case PrecisionOverride::kFp16: p.precision = Precision::kFp16; break;
    case PrecisionOverride::kInt8:
      p.precision = hasInt8Mode(op.kind) ? Precision::kInt8 : Precision::kFp16;
      p.int8_filter = hasInt8Mode(op.kind);
      break;
  }
  return p;
}

double bytesOf(const std::vector<Operand>& ops, const Pricing& pr) {
  double b = 0.0;
  for (const Operand& o : ops) b += static_cast<double>(o.elements()) * pr.activation(o);
  return b;
}

// A reshape that only inserts or drops unit axes (device_model.h: a view).
bool isView(const OpDesc& op) {
  if (op.kind != OpKind::kReshape) return false;
  Dims in, out;
  for (int d : op.inputs[0].dims)
    if (d != 1) in.push_back(d);
  for (int d : op.outputs[0].dims)
    if (d != 1) out.push_back(d);
  return in == out;
}

// Bytes an op reads of its input i: the whole tensor, except that a strided slice fetches
// only what it selects: the selected rows along the outer axes, but along the innermost axis
// the DMA moves contiguous bursts, so a stride there still costs the span from the first to
// the last element taken.
double readBytes(const OpDesc& op, std::size_t i, const Pricing& pr) {
  if (op.kind == OpKind::kHostTransfer) return 0.0;  // over the host link (host_us), not DRAM
  if (isView(op)) return 0.0;
  if (op.kind == OpKind::kGatherV2) return 4.0 * static_cast<double>(op.inputs[i].elements());
  const double size = pr.activation(op.inputs[i]);
  if (op.kind != OpKind::kSlice) return static_cast<double>(op.inputs[i].elements()) * size;
  const Dims& out = op.outputs[0].dims;
  const std::size_t last = out.size() - 1;
  double elements = static_cast<double>(out[last] - 1) * op.slice.stride[last] + 1.0;
  for (std::size_t a = 0; a < last; ++a) elements *= out[a];
  return elements * size;
}

double readBytes(const OpDesc& op, const Pricing& pr) {
  double b = 0.0;
  for (std::size_t i = 0; i < op.inputs.size(); ++i) b += readBytes(op, i, pr);
  return b;
}

// Batch x channels: how element-wise work is dealt out to cores.
long long planeCount(const Dims& d) {
  return d.size() >= 2 ? static_cast<long long>(d[0]) * d[1] : d[0];
}

// Element-wise on NCHW: each output row reads the same input row.
void rowLocal(LayerWork& w, const Dims& out) {
  if (out.size() != 4) return;
  w.row_local = true;
  w.out_height = out[2];
}

// The op list's producers: tensor id -> index of the op writing it.
std::map<std::uint64_t, int> producers(const std::vector<const OpDesc*>& ops) {
  std::map<std::uint64_t, int> by_id;
  for (std::size_t i = 0; i < ops.size(); ++i)
    for (const Operand& o : ops[i]->outputs) by_id[o.id] = static_cast<int>(i);
  return by_id;
}

std::vector<GraphLayer> baseGraph(const std::vector<const OpDesc*>& ops,
                                  const std::vector<PrecisionOverride>& as) {
  const auto by_id = producers(ops);
  std::vector<GraphLayer> graph(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const PrecisionOverride a = i < as.size() ? as[i] : PrecisionOverride::kAsBuilt;
    const Pricing pr = pricingOf(*ops[i], a);
    graph[i].work = layerWorkOf(*ops[i], a);
    graph[i].last_use = static_cast<int>(i);
    for (std::size_t k = 0; k < ops[i]->inputs.size(); ++k) {
      auto it = by_id.find(ops[i]->inputs[k].id);
      int p = it != by_id.end() && it->second < static_cast<int>(i) ? it->second : -1;
      graph[i].inputs.emplace_back(p, readBytes(*ops[i], k, pr));
    }
  }
  return graph;
}

}  // namespace

const DeviceProfile& mockProfile() { return currentProfile(); }

namespace {

// The work column of the op-kind table (op_kinds.h): an op's flops and how its work is laid
// out, beyond the bytes and the defaults layerWorkOf sets for every op.
struct Extent {
  const Dims& in;   // the first input's dims
  const Dims& out;  // the first output's dims
  double out_elems;
};
using Work = void (*)(const OpDesc& op, const Extent& e, LayerWork& w);

void convWork(const OpDesc& op, const Extent& e, LayerWork& w) {
  const Dims& f = op.consts[0]->dims;
  w.flops = 2.0 * e.out_elems * f[1] * f[2] * f[3];
  w.parallel_extent = e.out[1];
  w.frames = 1;
  rowLocal(w, e.out);
  w.window_h = op.conv.dh * (f[2] - 1) + 1;
  w.stride_h = op.conv.sh;
}

void deconvWork(const OpDesc& op, const Extent& e, LayerWork& w) {
  // Every input pixel scatters into co / group * kh * kw outputs (filter [ci, co/g, kh, kw]).
  const Dims& f = op.consts[0]->dims;
  w.flops = 2.0 * static_cast<double>(op.inputs[0].elements()) * f[1] * f[2] * f[3];
  w.parallel_extent = e.out[1];
  w.frames = 1;
  rowLocal(w, e.out);
  // Upsampling by the stride: a tile of R output rows reads about R / sh input rows plus
  // ceil(dh * (kh - 1) / sh) rows of halo.
  const int sh = op.deconv.sh, reach = op.deconv.dh * (f[2] - 1);
  w.upsample_h = sh;
  w.stride_h = 1;
  w.window_h = (reach + sh - 1) / sh + 1;
}

void resizeWork(const OpDesc& op, const Extent& e, LayerWork& w) {
  // A gather: one move per output (nearest) or four multiply-adds (bilinear). An output
  // row reads one input row (nearest) or two neighbouring ones (bilinear).
  const bool linear = op.kind == OpKind::kInterp;
  w.flops = (linear ? 8.0 : 1.0) * e.out_elems;
  rowLocal(w, e.out);
  const int taps = linear ? 2 : 1;
  if (e.out[2] >= e.in[2]) {
    w.upsample_h = e.out[2] / e.in[2];
    w.stride_h = 1;
    w.window_h = taps;
  } else {
    w.stride_h = (e.in[2] + e.out[2] - 1) / e.out[2];
    w.window_h = w.stride_h + taps - 1;
  }
}

void mlpWork(const OpDesc& op, const Extent& e, LayerWork& w) {
  double k = static_cast<double>(op.inputs[0].elements()) / e.in[0];
  w.flops = 2.0 * e.out_elems * k;
  w.parallel_extent = e.out[1];
  w.frames = 1;
}

void poolWork(const OpDesc& op, const Extent& e, LayerWork& w) {
  w.flops = e.out_elems * op.pool.kh * op.pool.kw;
  rowLocal(w, e.out);
  w.window_h = op.pool.dh * (op.pool.kh - 1) + 1;
  w.stride_h = op.pool.sh;
}

void lrnWork(const OpDesc& op, const Extent& e, LayerWork& w) {
  w.flops = e.out_elems * (2.0 * op.lrn.size + 4.0);
  rowLocal(w, e.out);
}

void softmaxWork(const OpDesc&, const Extent& e, LayerWork& w) { w.flops = 4.0 * e.out_elems; }

void logSoftmaxWork(const OpDesc&, const Extent& e, LayerWork& w) {
  w.flops = 5.0 * e.out_elems;  // softmax's passes + a log
}

void reduceWork(const OpDesc& op, const Extent&, LayerWork& w) {
  // One op per input element (an add, a compare or a multiply); the whole input is
  // read, and a reduction across rows needs every row, so no row tiling.
  w.flops = static_cast<double>(op.inputs[0].elements());
}

void batchDotWork(const OpDesc& op, const Extent& e, LayerWork& w) {
  // 2 m n k per output matrix, on the matrix units like Mlp; the whole of both inputs
  // is needed (b is read by every row of a).
  const Dims& a = op.inputs[0].dims;
  const double k = op.trans_a ? a[a.size() - 2] : a[a.size() - 1];
  w.flops = 2.0 * e.out_elems * k;
  w.parallel_extent = static_cast<long long>(op.outputs[0].elements() / e.out.back());
}

void layerNormWork(const OpDesc&, const Extent& e, LayerWork& w) {
  // Two reductions and a normalise-scale-shift per element (Mock assumption: like
  // softmax's three passes, plus the affine).
  w.flops = 6.0 * e.out_elems;
}

void unaryWork(const OpDesc& op, const Extent& e, LayerWork& w) {
  // Mock assumption: a square or sqrt is a vector op or two; erf and GELU are a
  // polynomial/exp evaluation, priced like ~10 vector ops.
  w.flops = (op.unary == UnaryFn::kErf || op.unary == UnaryFn::kGelu ||
                     op.unary == UnaryFn::kGeluTanh || op.unary == UnaryFn::kPower ||
                     op.unary == UnaryFn::kExp || op.unary == UnaryFn::kLog ||
                     op.unary == UnaryFn::kSin || op.unary == UnaryFn::kCos
                 ? 10.0 : 2.0) * e.out_elems;
  rowLocal(w, e.out);
}

// Active, BatchNorm, Scale, Add and Prelu (a compare-select and a multiply, like an
// activation).
void elementwiseWork(const OpDesc&, const Extent& e, LayerWork& w) {
  w.flops = 2.0 * e.out_elems;
  rowLocal(w, e.out);
}

void binaryWork(const OpDesc& op, const Extent& e, LayerWork& w) {
  // Element-wise like Add; RealDiv counts twice (Mock assumption: a reciprocal, then a
  // multiply). A broadcast b keeps rows local: each output row reads its own row of a
  // and b's row for it, or b's only row (whose producer is not tiled, so the block
  // completes b before the tiles read it).
  // Pow is an exp of a log: priced like the transcendental unary ops.
  w.flops = (op.binary == BinaryOp::kPow ? 10.0
             : op.binary == BinaryOp::kRealDiv ? 4.0 : 2.0) * e.out_elems;
  rowLocal(w, e.out);
}

void sliceWork(const OpDesc& op, const Extent& e, LayerWork& w) {
  // Pure data movement. Rows stay local only when H is kept whole (the usual channel or
  // width slice); a slice along H maps output rows to other input rows, so it needs its
  // whole input like a transpose.
  if (e.in.size() == 4 && op.slice.begin[2] == 0 && op.slice.end[2] == e.in[2] &&
      op.slice.stride[2] == 1)
    rowLocal(w, e.out);
}

void concatWork(const OpDesc& op, const Extent& e, LayerWork& w) {
  if (op.axis != 2) rowLocal(w, e.out);  // channel (or batch / width) concat keeps rows
}

void reshapeWork(const OpDesc& op, const Extent&, LayerWork& w) {
  if (isView(op)) {
    w.view = true;
    w.output_bytes = 0.0;
  }
}

void movementWork(const OpDesc&, const Extent&, LayerWork&) {}  // whole tensors, no flops

void gatherWork(const OpDesc& op, const Extent& e, LayerWork& w) {
  // Data movement: the rows the indices select are read from the table (not the whole
  // table) and written out; the int32 indices are read as 4 bytes each.
  w.weight_bytes = w.output_bytes;
  w.input_bytes = 4.0 * static_cast<double>(op.inputs[0].elements());
  w.flops = e.out_elems;
}

void hostTransferWork(const OpDesc& op, const Extent&, LayerWork& w) {
  // Nothing computed or moved through DRAM on the device: the inputs go to the host and
  // the output comes back over the host link, one after the other.
  w.input_bytes = w.output_bytes = 0.0;
  w.host_us = (op.to_host_bytes + op.to_device_bytes) / mockProfile().hostLinkBytesPerUs();
}

void rnnWork(const OpDesc& op, const Extent&, LayerWork& w) {
  // Only where a backend computes it (its forwards are wall-clock timed): the input
  // projection and T steps of [B, H] x [H, G*H], sequential in time, so parallel over
  // batch and gates only. The SDK's own model prices the cell ops the mock runs.
  const Dims& x = op.inputs[0].dims;
  const double steps = op.rnn.batch_first ? x[1] : x[0];
  const double batch = op.rnn.batch_first ? x[0] : x[1];
  const double gh = static_cast<double>(op.rnn.gates) * op.rnn.hidden;
  w.flops = 2.0 * steps * batch * gh * (x[2] + op.rnn.hidden) + 10.0 * steps * batch * gh;
  w.parallel_extent = static_cast<long long>(batch * gh);
  w.frames = static_cast<long long>(batch);
}

void castWork(const OpDesc&, const Extent& e, LayerWork& w) {
  // Element-wise conversion: one op per element, memory-bound in practice.
  w.flops = e.out_elems;
  rowLocal(w, e.out);
}

constexpr Work kWork[] = {
#define PZ_SDK_OP_KIND_WORK(kind, name, prepare, kernel, work) work,
    PZ_SDK_OP_KINDS(PZ_SDK_OP_KIND_WORK)
#undef PZ_SDK_OP_KIND_WORK
};

}  // namespace

LayerWork layerWorkOf(const OpDesc& op, PrecisionOverride as) {
  const Pricing pr = pricingOf(op, as);
  LayerWork w;
  w.precision = pr.precision;
  w.input_bytes = readBytes(op, pr);
  w.output_bytes = bytesOf(op.outputs, pr);
  for (std::size_t i = 0; i < op.consts.size(); ++i)
    if (op.consts[i])
      w.weight_bytes += static_cast<double>(elementCount(op.consts[i]->dims)) *
                        pr.constant(*op.consts[i], i);
  const Extent e{op.inputs[0].dims, op.outputs[0].dims,
                 static_cast<double>(op.outputs[0].elements())};
  w.parallel_extent = planeCount(e.out);
  w.frames = e.out.empty() ? 1 : e.out[0];
  kWork[static_cast<int>(op.kind)](op, e, w);
  if (op.sparse) priceSparse(w, op, pr);
  return w;
}

namespace {

// A view's bytes are its producer's: the producer's output is needed as long as the view's.
void extendThroughViews(std::vector<GraphLayer>& graph) {
  for (std::size_t i = graph.size(); i-- > 0;) {
    if (!graph[i].work.view || graph[i].inputs.empty()) continue;
    const int p = graph[i].inputs[0].first;
    if (p >= 0) graph[p].last_use = std::max(graph[p].last_use, graph[i].last_use);
  }
}

}  // namespace

std::vector<GraphLayer> fusionGraphOf(const std::vector<const OpDesc*>& ops,
                                      const std::vector<std::uint64_t>& outputs,
                                      const std::vector<PrecisionOverride>& as) {
  std::vector<GraphLayer> graph = baseGraph(ops, as);
  const int n = static_cast<int>(ops.size());
  const std::set<std::uint64_t> out_ids(outputs.begin(), outputs.end());
  for (int i = 0; i < n; ++i) {
    for (const Operand& o : ops[i]->outputs)
      if (out_ids.count(o.id)) graph[i].last_use = n;
    for (const auto& in : graph[i].inputs)
      if (in.first >= 0 && graph[in.first].last_use < n)
        graph[in.first].last_use = std::max(graph[in.first].last_use, i);
  }
  extendThroughViews(graph);
  return graph;
}

std::vector<GraphLayer> listGraphOf(const std::vector<const OpDesc*>& ops,
                                    const std::vector<int>& last_use,
                                    const std::vector<PrecisionOverride>& as) {
  std::vector<GraphLayer> graph = baseGraph(ops, as);
  for (std::size_t i = 0; i < graph.size(); ++i)
    graph[i].last_use = std::max(static_cast<int>(i), last_use[i]);
  extendThroughViews(graph);
  return graph;
}

double fusionOpTimeUs(const std::vector<const OpDesc*>& ops,
                      const std::vector<std::uint64_t>& outputs, int mp) {
  const std::vector<GraphLayer> graph = fusionGraphOf(ops, outputs);
  return fusedBlockTimeUs(graph, 0, static_cast<int>(graph.size()), mp, mockProfile());
}

OpTiming::OpTiming(std::vector<GraphLayer> graph, int mp, bool fused)
    : graph_(std::move(graph)), mp_(mp), fused_(fused) {
  for (int dp = 1; dp * mp <= mockProfile().cores; ++dp) by_dp_.push_back(price({dp, 1.0}));
}

OpTiming baseOpTiming(const OpDesc& op, int mp) {
  std::vector<GraphLayer> one(1);
  one[0].work = layerWorkOf(op);
  return OpTiming(std::move(one), mp, false);
}

OpTiming fusionOpTiming(const std::vector<const OpDesc*>& ops,
                        const std::vector<std::uint64_t>& outputs, int mp) {
  return OpTiming(fusionGraphOf(ops, outputs), mp, true);
}

double OpTiming::us(const Launch& launch) const {
  const std::size_t i = static_cast<std::size_t>(launch.dp - 1);
  if (launch.dram_share >= 1.0 && i < by_dp_.size()) return by_dp_[i];
  const auto key = std::make_pair(launch.dp, launch.dram_share);
  auto it = pinned_.find(key);
  if (it == pinned_.end()) it = pinned_.emplace(key, price(launch)).first;
  return it->second;
}

double OpTiming::price(const Launch& launch) const {
  const DeviceProfile profile = launchProfile(mockProfile(), launch);
  if (!fused_) return baseOpTimeUs(frameGroupWork(graph_[0].work, launch.dp), mp_, profile);
  const int n = static_cast<int>(graph_.size());
  if (launch.dp == 1) return fusedBlockTimeUs(graph_, 0, n, mp_, profile);
  return fusedBlockTimeUs(frameGroupGraph(graph_, launch.dp), 0, n, mp_, profile);
}

}  // namespace pz_sdk

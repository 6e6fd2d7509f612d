// HalfOp's run, and makeHalf: a conv head converts its own operands (ConvertingOp), other
// fp16 chains run as HalfOp.
#include "half_op.h"

#include "conversions.h"
#include "converting_op.h"
#include "kernels/workspace.h"

namespace pz_sdk {
namespace onednn {

void HalfOp::run(const void* const* inputs, void* const* outputs) {
  std::size_t floats = out_own_.empty() ? lineFloats(out_size_) : 0;
  for (std::size_t i = 0; i < in_sizes_.size(); ++i)
    if (!from_[i]) floats += lineFloats(in_sizes_[i]);
  float* at = threadWorkspace(floats, 1);
  std::vector<const void*> in(in_sizes_.size());
  for (std::size_t i = 0; i < in_sizes_.size(); ++i) {
    if (from_[i]) {
      in[i] = from_[i];
      continue;
    }
    decode(static_cast<const std::uint16_t*>(inputs[i]), at, in_sizes_[i], threads_);
    in[i] = at;
    at += lineFloats(in_sizes_[i]);
  }
  float* out32 = out_own_.empty() ? at : out_own_.data();
  void* out = out32;
  inner_->run(in.data(), &out);
  if (!skip_dense_)
    encode(out32, static_cast<std::uint16_t*>(outputs[0]), out_size_, threads_);
}

std::unique_ptr<BackendOp> makeHalf(const std::vector<const OpDesc*>& chain, int threads,
                                    const FloatPath& fp32) {
  for (const OpDesc* d : chain)
    if (d->int8 || d->kind == OpKind::kCast || d->outputs.size() != 1 ||
        !allOf(d->inputs, CNML_DATA_FLOAT16) || !allOf(d->outputs, CNML_DATA_FLOAT16))
      return nullptr;
  const OpDesc& head = *chain.front();
  if ((head.kind == OpKind::kConv || head.kind == OpKind::kConvGroup) && head.inputs.size() == 1)
    if (std::unique_ptr<BackendOp> op = makeConvertingConv(head, chain, threads, fp32, false))
      return op;
  auto ops = std::make_shared<const std::vector<OpDesc>>(asFloat(chain));
  std::unique_ptr<BackendOp> inner = fp32.make(pointers(*ops), threads, false);
  if (!inner) return nullptr;
  auto op = std::make_unique<HalfOp>(std::move(inner), chainInputSizes(chain),
                                     chain.back()->outputs[0].elements(), threads);
  op->chain_ = std::move(ops);
  op->fp32_ = fp32;
  return op;
}

}  // namespace onednn
}  // namespace pz_sdk

// CPU kernels of the mock. Each takes dense fp32 buffers and an OpenMP thread count.
#ifndef PZ_SDK_KERNELS_H_
#define PZ_SDK_KERNELS_H_

#include "core/executor.h"
#include "parallel.h"

namespace pz_sdk {

// kernels_conv.cpp
// A conv op's dimensions: input n, ci, h, w; output co, ho, wo; kernel; per-group channels
// and k = cig * kh * kw, the length of one output's reduction.
struct ConvShape {
  int n, ci, h, w, co, ho, wo, kh, kw, group, cig, cog, k;
};
ConvShape convShapeOf(const OpDesc& d);
// op.bias for conv, deconv and mlp ops: the bias const (consts[1]), or `channels` zeros when
// the op has none.
void prepareBias(PreparedOp& op, int channels);

void prepareConv(PreparedOp& op);
void convForward(PreparedOp& op, const float* in, float* out);

// kernels_conv_deconv.cpp
void prepareDeconv(PreparedOp& op);
void deconvForward(PreparedOp& op, const float* in, float* out);

// kernels_image.cpp: the output -> input index and weight tables are built at compile.
void prepareResize(PreparedOp& op);
void nearestForward(const PreparedOp& op, const float* in, float* out);
void bilinearForward(const PreparedOp& op, const float* in, float* out);

// kernels_int8.cpp: int8 compute (numerics.h); in is the decoded fp32 input, out gets y
// before the binary16 rounding.
void prepareConvInt8(PreparedOp& op);
void convForwardInt8(PreparedOp& op, const float* in, float* out);
void prepareMlpInt8(PreparedOp& op);
void mlpForwardInt8(PreparedOp& op, const float* in, float* out);

// kernels_dense.cpp
void prepareMlp(PreparedOp& op);
void mlpForward(PreparedOp& op, const float* in, float* out);
// out = op(a) x op(b) over the last two axes, batch dims broadcast (op.trans_a/trans_b).
void batchDotForward(const OpDesc& op, const float* a, const float* b, float* out, int threads);

// kernels_pool.cpp
void poolForward(const OpDesc& op, const float* in, float* out, int threads);

// kernels_normalize.cpp
// out[i] = (in[i] - a[c]) * b[c] for channel c of axis 1 (batchnorm), or in * a[c] + b[c]
// (scale); a/b of length 1 broadcast over channels. b may be null for scale.
void channelAffineForward(const OpDesc& op, bool batchnorm, const float* in, float* out,
                          int threads);
void lrnForward(const OpDesc& op, const float* in, float* out, int threads);
// (x - mean) / sqrt(var + eps) * scale + bias over the axes from op.axis on.
void layerNormForward(const OpDesc& op, const float* in, float* out, int threads);

// kernels_elementwise.cpp
void activeForward(cnmlActiveFunction_t fn, const float* in, float* out, std::size_t n, int threads);
void addForward(const float* a, const float* b, float* out, std::size_t n, int threads);
// out = a (+ - * /) b by op.binary; b has a's shape or broadcasts to it (op.broadcast: b
// right-aligned, each dim equal to a's or 1).
void binaryForward(const OpDesc& op, const float* a, const float* b, float* out, int threads);
// out = x >= 0 ? x : slope[c] * x for channel c of axis 1; a slope of length 1 is shared.
void preluForward(const OpDesc& op, const float* in, float* out, int threads);
// out = f(in) for op.unary (Sqrt, Rsqrt, Power, Erf, Gelu exact or tanh, Exp, Log, Abs, Neg).
void unaryForward(const OpDesc& op, const float* in, float* out, int threads);

// kernels_layout.cpp
void softmaxForward(const OpDesc& op, const float* in, float* out, int threads);
// log(softmax(in)) along op.axis: (x - max) - log(sum(exp(x - max))), the sum in double.
void logSoftmaxForward(const OpDesc& op, const float* in, float* out, int threads);
void concatForward(const OpDesc& op, const float* const* inputs, float* out, int threads);
void transposeForward(const OpDesc& op, const float* in, float* out, int threads);
// out = in[begin:end:stride] along every axis (op.slice).
void sliceForward(const OpDesc& op, const float* in, float* out, int threads);
void copyForward(const float* in, float* out, std::size_t n, int threads);
// GatherV2: rows of the bound table (consts[0], fp32 or fp16 as the output) by int32
// indices; an index outside [0, table[axis]) throws OpDataError (INVALIDPARAM).
void gatherV2Forward(const PreparedOp& op, const std::int32_t* index, void* out);

// kernels_reduce.cpp
// op.reduce over op.axes (sum, mean and prod in double; max and min propagate nan).
void reduceForward(const OpDesc& op, const float* in, float* out, int threads);

}  // namespace pz_sdk

#endif  // PZ_SDK_KERNELS_H_

// A compiled op: its description with const data snapshotted, weights pre-packed for the
// kernels, and scratch reused across forwards (so a forward never page-faults fresh memory).
// An op is not re-entrant: its owner (cnmlBaseOp, cnmlFusionOp) runs one forward at a time.
#ifndef PZ_SDK_EXECUTOR_H_
#define PZ_SDK_EXECUTOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/aligned_buffer.h"
#include "compute_backend.h"
#include "state.h"
#include "kernels/workspace.h"

namespace pz_sdk {

struct PreparedOp {
  OpDesc desc;
  int threads = 1;
  bool depthwise = false;
  AlignedBuffer packed_weights;  // conv: packed A per group; mlp: packed B = filter^T;
                                 // deconv: packed A = filter^T per group
  Scratch scratch;               // conv: packed im2col; mlp: packed input rows;
                                 // deconv: packed input rows + their columns
  std::vector<float> bias;       // conv/deconv/mlp: zeros when the op has no bias
  int chunk_rows = 0;            // deconv: input rows per GEMM (bounds the columns buffer)
  // Resize tables, per output row then per output column: nearest, the input index;
  // bilinear, the two neighbours (i1, i2) and their weights (d1, d2) as onnxruntime's.
  std::vector<int> row_index, col_index;
  std::vector<float> row_weight, col_weight;
  // fp16 / int8 ops: inputs decoded to fp32 and outputs before rounding to binary16.
  Precision precision = Precision::kFp32;
  std::vector<Scratch> in32, out32;
  // int8 conv / mlp (kernels_int8.cpp): per output channel rescale f_c (and `bias`), the
  // filter's q values (conv: packed panels), and in the thread's workspace the quantised
  // input and per-thread im2col blocks (int16 values: qinput16(), qscratch16()).
  std::vector<float> rescale;
  std::vector<std::int16_t> qweights;
  Scratch qinput, qscratch;
  int block_panels = 1;
  // Set when the linked backend computes this op (compute_backend.h); the fields above are then
  // unused.
  std::unique_ptr<BackendOp> backend;
};

// desc must have every const bound.
std::unique_ptr<PreparedOp> prepare(const OpDesc& desc, int threads);

// A fusion's chain of ops computed as one backend op (compute_backend.h); desc is the first
// op's. Null when the backend does not compute the chain.
std::unique_ptr<PreparedOp> prepareChain(const std::vector<const OpDesc*>& chain, int threads);

// inputs/outputs follow desc.inputs/desc.outputs order; buffers are dense in each operand's
// dtype (fp32, or binary16 for FLOAT16 operands).
void execute(PreparedOp& op, const void* const* inputs, void* const* outputs);

// What computes the op: its backend op's kernel, or "mock kernel <kind>".
std::string implementationOf(const PreparedOp& op);

}  // namespace pz_sdk

#endif  // PZ_SDK_EXECUTOR_H_

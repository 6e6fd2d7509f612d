// The SDK's op kinds, one row each: what the mock calls the kind, how it prepares a compiled
// op (prepare), computes it on fp32 buffers (kernel, executor.cpp) and prices it (work,
// op_cost.cpp). Adding an op kind is one row here and the functions it names.
#ifndef PZ_SDK_OP_KINDS_H_
#define PZ_SDK_OP_KINDS_H_

// X(kind, name, prepare, kernel, work); nullptr: nothing to prepare / no fp32 kernel
// (execute() computes the kind itself, or only a backend does).
#define PZ_SDK_OP_KINDS(X)                                                                        \
  X(kConv, "Conv", prepareConvOp, convKernel, convWork)                                           \
  X(kConvGroup, "ConvGroup", prepareConvOp, convKernel, convWork)                                 \
  X(kPool, "Pool", nullptr, withDesc<poolForward>, poolWork)                                      \
  X(kActive, "Active", nullptr, activeKernel, elementwiseWork)                                    \
  X(kBatchNorm, "BatchNorm", nullptr, batchNormKernel, elementwiseWork)                           \
  X(kScale, "Scale", nullptr, scaleKernel, elementwiseWork)                                       \
  X(kAdd, "Add", nullptr, addKernel, elementwiseWork)                                             \
  X(kMlp, "Mlp", prepareMlpOp, mlpKernel, mlpWork)                                                \
  X(kSoftmax, "Softmax", nullptr, withDesc<softmaxForward>, softmaxWork)                          \
  X(kConcat, "Concat", nullptr, concatKernel, concatWork)                                         \
  X(kLrn, "Lrn", nullptr, withDesc<lrnForward>, lrnWork)                                          \
  X(kReshape, "Reshape", nullptr, reshapeKernel, reshapeWork)                                     \
  X(kTranspose, "Transpose", nullptr, withDesc<transposeForward>, movementWork)                   \
  /* Sub, Mult, RealDiv, Pow, the comparisons, the logic ops and the Broadcast* and               \
     Cycle* forms (OpDesc::binary; Add keeps kAdd) */                                             \
  X(kBinary, "Binary", nullptr, withDesc2<binaryForward>, binaryWork)                             \
  X(kSlice, "NdStridedSlice", nullptr, withDesc<sliceForward>, sliceWork)                         \
  X(kPrelu, "Prelu", nullptr, withDesc<preluForward>, elementwiseWork)                            \
  X(kDeconv, "Deconv", prepareDeconv, withPrepared<deconvForward>, deconvWork)                    \
  X(kDeconvGroup, "DeconvGroup", prepareDeconv, withPrepared<deconvForward>, deconvWork)          \
  X(kNearestNeighbor, "NearestNeighbor", prepareResize, withPrepared<nearestForward>, resizeWork) \
  X(kInterp, "Interp", prepareResize, withPrepared<bilinearForward>, resizeWork)                  \
  X(kCast, "Cast", nullptr, nullptr, castWork)                                                    \
  /* out[b] = op(a[b]) x op(b[b]), batch dims broadcast (numpy) */                                \
  X(kBatchDot, "BatchDot", nullptr, withDesc2<batchDotForward>, batchDotWork)                     \
  /* normalised over the axes from `axis` on, then * scale + bias */                              \
  X(kLayerNorm, "LayerNorm", nullptr, withDesc<layerNormForward>, layerNormWork)                  \
  /* Sqrt, Rsqrt, Power, Erf, Gelu, Exp, Log, Abs, Neg, Not, Sin, Cos, Clip                       \
     (OpDesc::unary) */                                                                           \
  X(kUnary, "Unary", nullptr, withDesc<unaryForward>, unaryWork)                                  \
  /* log(softmax) along `axis`, max-subtracted */                                                 \
  X(kLogSoftmax, "LogSoftmax", nullptr, withDesc<logSoftmaxForward>, logSoftmaxWork)              \
  /* sum/mean/max/min/prod (OpDesc::reduce) over OpDesc::axes */                                  \
  X(kReduce, "Reduce", nullptr, withDesc<reduceForward>, reduceWork)                              \
  /* The device<->host copies of a layer the session computes on the host (mock                   \
     extension, cnml_mock.h): no arithmetic on the device, priced as transfers                    \
     over the host link. */                                                                       \
  X(kHostTransfer, "HostTransfer", nullptr, nullptr, hostTransferWork)                            \
  /* rows of a const table (consts[0]) by int32 indices (inputs[0]); axis */                      \
  X(kGatherV2, "GatherV2", nullptr, nullptr, gatherWork)                                          \
  /* One direction of an LSTM/GRU/RNN over a sequence (cnmlCreateRnnOp): only where               \
     the backend computes it (backendComputesRecurrent); the mock's kernels have                  \
     none. */                                                                                     \
  X(kRnn, "Rnn", backendOnly, nullptr, rnnWork)

#endif  // PZ_SDK_OP_KINDS_H_

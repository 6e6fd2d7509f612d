// The CNML ops that share one OpKind and differ by a function (UnaryFn, BinaryOp, ReduceFn):
// one row per CNML op name, expanded into its creator (ops_create_elementwise.cpp) and its
// forward (base_ops.cpp).
#ifndef PZ_SDK_OP_FAMILIES_H_
#define PZ_SDK_OP_FAMILIES_H_

// X(sdk_op, BinaryOp, broadcast): cnmlCreate<sdk_op>Op / cnmlCompute<sdk_op>OpForward_V4 over
// two inputs; broadcast (the Broadcast* and Cycle* forms) lets in2 broadcast to in1.
#define PZ_SDK_BINARY_OPS(X)                      \
  X(Sub, BinaryOp::kSub, false)                    \
  X(Mult, BinaryOp::kMult, false)                  \
  X(RealDiv, BinaryOp::kRealDiv, false)            \
  X(BroadcastAdd, BinaryOp::kAdd, true)            \
  X(BroadcastSub, BinaryOp::kSub, true)            \
  X(BroadcastMult, BinaryOp::kMult, true)          \
  X(Pow, BinaryOp::kPow, false)                    \
  X(BroadcastPow, BinaryOp::kPow, true)            \
  X(Equal, BinaryOp::kEqual, false)                \
  X(CycleEqual, BinaryOp::kEqual, true)            \
  X(NEqual, BinaryOp::kNotEqual, false)            \
  X(CycleNEqual, BinaryOp::kNotEqual, true)        \
  X(Less, BinaryOp::kLess, false)                  \
  X(CycleLess, BinaryOp::kLess, true)              \
  X(LessEqual, BinaryOp::kLessEqual, false)        \
  X(CycleLessEqual, BinaryOp::kLessEqual, true)    \
  X(Greater, BinaryOp::kGreater, false)            \
  X(CycleGreater, BinaryOp::kGreater, true)        \
  X(GreaterEqual, BinaryOp::kGreaterEqual, false)  \
  X(CycleGreaterEqual, BinaryOp::kGreaterEqual, true) \
  X(And, BinaryOp::kAnd, false)                    \
  X(CycleAnd, BinaryOp::kAnd, true)                \
  X(Or, BinaryOp::kOr, false)                      \
  X(CycleOr, BinaryOp::kOr, true)                  \
  X(Xor, BinaryOp::kXor, false)                    \
  X(CycleXor, BinaryOp::kXor, true)

// X(sdk_op, UnaryFn): the unary ops whose creator takes (op, input, output) only; Power, Gelu
// and Clip take more and are written out.
#define PZ_SDK_UNARY_OPS(X) \
  X(Sqrt, UnaryFn::kSqrt)    \
  X(Rsqrt, UnaryFn::kRsqrt)  \
  X(Erf, UnaryFn::kErf)      \
  X(Exp, UnaryFn::kExp)      \
  X(Log, UnaryFn::kLog)      \
  X(Abs, UnaryFn::kAbs)      \
  X(Neg, UnaryFn::kNeg)      \
  X(Not, UnaryFn::kNot)      \
  X(Sin, UnaryFn::kSin)      \
  X(Cos, UnaryFn::kCos)

// X(sdk_op, ReduceFn)
#define PZ_SDK_REDUCE_OPS(X)          \
  X(NdReduceSum, ReduceFn::kSum)       \
  X(NdReduceMean, ReduceFn::kMean)     \
  X(NdReduceMax, ReduceFn::kMax)       \
  X(NdReduceMin, ReduceFn::kMin)       \
  X(NdReduceProd, ReduceFn::kProd)

#endif  // PZ_SDK_OP_FAMILIES_H_

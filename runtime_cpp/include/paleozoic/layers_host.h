// Host layers: the work the SDK cannot run (casts of integer inputs, integer index arithmetic,
// ArgMax, TopK), computed on the CPU inside the session between device blocks, the way TVM's BYOC
// partitions a graph between an accelerator and the host. Each is a layer of its own block:
// it cannot join a fusion op. Its device time is the copies of its inputs to the host and of
// its output back (integer tensors already live on the host), priced by the SDK's device
// model as a transfer op.
#ifndef PALEOZOIC_LAYERS_HOST_H_
#define PALEOZOIC_LAYERS_HOST_H_

#include <limits>  // emitted sessions write -std::numeric_limits<float>::infinity()
#include <optional>
#include <string>
#include <vector>

#include "paleozoic/core.h"
#include "paleozoic/enums.h"

namespace pz {

// The base of the host layers: run() waits for the device queue, reads the inputs into host
// memory, calls compute() and writes the output (to the device for a float or int32 output).
class HostLayer : public Layer {
 public:
  bool onHost() const override { return true; }

 protected:
  HostLayer(std::string name, std::vector<Tensor*> inputs, Shape output_shape,
            ElementType output_type);
  // Values as doubles: exact for every fp32/fp16 value and every integer below 2^53.
  virtual void compute(const std::vector<std::vector<double>>& inputs,
                       std::vector<double>& output) const = 0;
  // Whether an input no layer has written yet is read as zeros (the branch of a run-time
  // If the session did not run, which a HostWhere then does not select) rather than an
  // error.
  virtual bool readsBranchesNotRun() const { return false; }

 private:
  cnmlStatus_t forward(cnrtQueue_t queue) override;
  void settleDataTypes() override {}  // the output's type is the layer's, not the block's
};

// ONNX Cast on the host: uint8 pixels or an int64 mask to float32, int64 ids to the int32
// indices GatherV2 takes, and any integer or float tensor to an integer type (float to int
// truncates toward zero). A value outside the target's range is a pz::Error naming the
// layer. `shape` (same element count) reshapes on the way: an integer tensor's Reshape or
// Unsqueeze is a host copy too. With `wrap` > 0, negative values get wrap added first (ONNX
// Gather's indices count from the end of the table's axis).
class HostCastLayer : public HostLayer {
 public:
  HostCastLayer(std::string name, Tensor& input, ElementType to, Shape shape = {}, int wrap = 0);

 private:
  void compute(const std::vector<std::vector<double>>& inputs,
               std::vector<double>& output) const override;
  ElementType to_;
  int wrap_;
};

// ONNX ArgMax: the int64 index of the largest value along `axis` (the first of equal
// values, or the last with select_last_index), the axis kept as 1 or dropped.
class HostArgMaxLayer : public HostLayer {
 public:
  HostArgMaxLayer(std::string name, Tensor& input, int axis, bool keepdims = true,
                  bool select_last_index = false);

 private:
  void compute(const std::vector<std::vector<double>>& inputs,
               std::vector<double>& output) const override;
  int axis_;
  bool select_last_;
};

// What a HostSelectLayer tests each input value for.
enum class HostTest { kNonZero, kIsNan };

// ONNX Where with a run-time condition, as exporters build attention masks and guard softmax:
// y = test(x) ? then : otherwise, x broadcast (numpy) to `shape`; an absent value
// (std::nullopt) takes x itself. Where(mask, 0, -inf-ish) on a bool mask is kNonZero with
// both values; Where(IsNaN(p), 0, p) is kIsNan with then = 0 and otherwise = x.
class HostSelectLayer : public HostLayer {
 public:
  HostSelectLayer(std::string name, Tensor& input, HostTest test, Shape shape,
                  std::optional<float> then_value, std::optional<float> otherwise);

 private:
  void compute(const std::vector<std::vector<double>>& inputs,
               std::vector<double>& output) const override;
  HostTest test_;
  std::optional<float> then_, otherwise_;
};

// A constant tensor operand of a HostArithLayer: its shape here, its values from the
// weights file (the layer's weight "constant", bound with configLayer).
struct HostConstant {
  Shape shape;
};

// An operand of a HostWhereLayer or HostArithLayer: a tensor (broadcast to the output), one
// number (a double, so that an int64 constant below 2^53 is exact) or a HostConstant.
struct HostOperand {
  HostOperand(Tensor& t) : tensor(&t) {}  // NOLINT: implicit, so sessions write the tensor
  HostOperand(double v) : value(v) {}     // NOLINT: ... or the number
  HostOperand(HostConstant c) : constant(std::move(c.shape)), is_constant(true) {}  // NOLINT
  Tensor* tensor = nullptr;
  double value = 0.0;
  Shape constant;
  bool is_constant = false;
};

// ONNX Where with a run-time condition and run-time values: y = condition != 0 ? then :
// otherwise, element by element, every tensor broadcast (numpy) to `shape`, of the value
// tensors' type (one for both; float32 when both values are numbers). The SDK has no
// select op, and a blend c * x + (1 - c) * y would turn the unselected side's inf and nan
// into nan. The condition is a bool mask (an integer tensor) or the 1.0s and 0.0s of the
// SDK's comparisons.
class HostWhereLayer : public HostLayer {
 public:
  HostWhereLayer(std::string name, Tensor& condition, HostOperand then, HostOperand otherwise,
                 Shape shape);

 private:
  void compute(const std::vector<std::vector<double>>& inputs,
               std::vector<double>& output) const override;
  bool readsBranchesNotRun() const override { return true; }
  std::optional<float> then_, otherwise_;  // absent: the next tensor input
};

// ONNX GatherElements: out[..., j, ...] = data[..., indices[..., j, ...], ...] along `axis`,
// the output of the indices' shape and the data's type; negative indices count from the
// end of the axis, and one outside the axis is a pz::Error naming the layer.
class HostGatherElementsLayer : public HostLayer {
 public:
  HostGatherElementsLayer(std::string name, Tensor& data, Tensor& indices, int axis);

 private:
  void compute(const std::vector<std::vector<double>>& inputs,
               std::vector<double>& output) const override;
  int axis_;
};

// Element-wise arithmetic, comparisons and logic the SDK has no op for, computed on the
// host: out = a op b, each operand a tensor, a number or a HostConstant (one at most: a
// causal mask And-ed with a run-time padding mask), broadcast (numpy) to
// `shape`, the result written as `to`. Token ids compared with an end-of-text id, a flat
// index split into a row and a class by kDiv and kMod, ONNX Mod of any tensor. With integer
// operands kDiv truncates toward zero and divides by zero only with a pz::Error naming the
// layer; kMod takes the divisor's sign (ONNX Mod fmod=0), kFmod the dividend's (fmod=1).
// Comparisons and logic (any nonzero value is true) give 1 where true and 0 where not.
class HostArithLayer : public HostLayer {
 public:
  HostArithLayer(std::string name, HostOperand a, HostOperand b, HostArith op, Shape shape,
                 ElementType to);

 private:
  void compute(const std::vector<std::vector<double>>& inputs,
               std::vector<double>& output) const override;
  // Where each operand comes from: a number, the next tensor input or the constant.
  enum class Source { kNumber, kInput, kConstant };
  static Source sourceOf(const HostOperand& v);
  Source a_from_, b_from_;
  double a_ = 0.0, b_ = 0.0;
  const ConstTensor* constant_ = nullptr;
  HostArith op_;
  bool integers_;  // both operands integers: integer division and remainders
};

// ONNX Gather of run-time data by run-time indices: out[a..., i..., b...] =
// data[a..., indices[i...], b...] along `axis`, of the data's type; negative indices count
// from the end of the axis, and one outside it is a pz::Error naming the layer.
class HostGatherLayer : public HostLayer {
 public:
  HostGatherLayer(std::string name, Tensor& data, Tensor& indices, int axis);

 private:
  void compute(const std::vector<std::vector<double>>& inputs,
               std::vector<double>& output) const override;
  int axis_;
};

// ONNX GridSample of 4-D data: out[n, c, i, j] = data[n, c] sampled at the position
// grid[n, :, i, j] (x then y, in [-1, 1] from the first to the last pixel: their centres
// with align_corners, their outer edges without), bilinearly or at the nearest pixel
// (ties to even); outside the image `padding` gives zeros, the border's values, or the
// values mirrored at the border. The grid is a tensor, or a HostConstant: the weight
// "grid" (positions from learned queries only, folded at compile time), bound with
// configLayer.
class HostGridSampleLayer : public HostLayer {
 public:
  HostGridSampleLayer(std::string name, Tensor& data, Tensor& grid, GridSampleMode mode,
                      GridSamplePadding padding, bool align_corners);
  HostGridSampleLayer(std::string name, Tensor& data, HostConstant grid, GridSampleMode mode,
                      GridSamplePadding padding, bool align_corners);

 private:
  void compute(const std::vector<std::vector<double>>& inputs,
               std::vector<double>& output) const override;
  GridSampleMode mode_;
  GridSamplePadding padding_;
  bool align_corners_;
  const ConstTensor* grid_ = nullptr;
};

// Which of ONNX TopK's outputs a HostTopKLayer gives: TopKOutput { kValues, kIndices }
// (enums.h).

// ONNX TopK (sorted): the k largest (or smallest) values along `axis` in order, equal values
// by ascending index, and NaN above every number as in ArgMax; the layer gives the values
// (the input's type) or their int64 indices. A model reading both has two layers.
class HostTopKLayer : public HostLayer {
 public:
  HostTopKLayer(std::string name, Tensor& input, int axis, int k, TopKOutput output,
                bool largest = true);

 private:
  void compute(const std::vector<std::vector<double>>& inputs,
               std::vector<double>& output) const override;
  int axis_, k_;
  TopKOutput which_;
  bool largest_;
};

}  // namespace pz

#endif  // PALEOZOIC_LAYERS_HOST_H_

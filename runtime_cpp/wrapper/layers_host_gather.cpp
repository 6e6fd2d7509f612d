// Host layers that index their data: GatherElements, Gather and GridSample.
#include <algorithm>
#include <cmath>

#include "detail.h"

namespace pz {

HostGatherElementsLayer::HostGatherElementsLayer(std::string name, Tensor& data,
                                                 Tensor& indices, int axis)
    : HostLayer(name, {&data, &indices}, indices.shape(), data.elementType()),
      axis_(detail::normaliseAxis(name_, axis, static_cast<int>(data.shape().size()))) {
  const Shape &d = data.shape(), &i = indices.shape();
  bool ok = d.size() == i.size();
  for (std::size_t a = 0; ok && a < d.size(); ++a)
    ok = static_cast<int>(a) == axis_ || i[a] <= d[a];
  if (!ok) {
    throw Error(name_ + ": indices " + shapeToString(i) + " do not fit data " +
                shapeToString(d) + " (the same rank, at most the data's size off axis " +
                std::to_string(axis_) + ")");
  }
  if (indices.elementType() == ElementType::kFloat) {
    throw Error(name_ + ": the indices must be an integer tensor, " + indices.name() +
                " is float32");
  }
}

void HostGatherElementsLayer::compute(const std::vector<std::vector<double>>& inputs,
                                      std::vector<double>& output) const {
  const Shape &d = inputs_[0]->shape(), &out = output_.shape();
  // Row-major strides of the data.
  std::vector<std::size_t> stride(d.size(), 1);
  for (std::size_t a = d.size(); a-- > 1;)
    stride[a - 1] = stride[a] * static_cast<std::size_t>(d[a]);
  const long long size = d[static_cast<std::size_t>(axis_)];
  std::vector<std::size_t> index(out.size(), 0);
  for (std::size_t k = 0; k < output.size(); ++k) {
    long long j = static_cast<long long>(inputs[1][k]);
    if (j < 0) j += size;
    if (j < 0 || j >= size) {
      throw Error(name_ + ": index " + std::to_string(static_cast<long long>(inputs[1][k])) +
                  " is outside axis " + std::to_string(axis_) + " of size " +
                  std::to_string(size));
    }
    std::size_t at = 0;
    for (std::size_t a = 0; a < out.size(); ++a)
      at += (static_cast<int>(a) == axis_ ? static_cast<std::size_t>(j) : index[a]) * stride[a];
    output[k] = inputs[0][at];
    for (std::size_t a = out.size(); a-- > 0;) {
      if (++index[a] < static_cast<std::size_t>(out[a])) break;
      index[a] = 0;
    }
  }
}

namespace {

Shape gatherShape(const std::string& layer, const Shape& data, const Shape& indices, int axis) {
  const int a = detail::normaliseAxis(layer, axis, static_cast<int>(data.size()));
  Shape out(data.begin(), data.begin() + a);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + a + 1, data.end());
  return out;
}

}  // namespace

HostGatherLayer::HostGatherLayer(std::string name, Tensor& data, Tensor& indices, int axis)
    : HostLayer(name, {&data, &indices}, gatherShape(name, data.shape(), indices.shape(), axis),
                data.elementType()),
      axis_(detail::normaliseAxis(name_, axis, static_cast<int>(data.shape().size()))) {
  if (indices.elementType() == ElementType::kFloat) {
    throw Error(name_ + ": the indices must be an integer tensor, " + indices.name() +
                " is float32");
  }
}

void HostGatherLayer::compute(const std::vector<std::vector<double>>& inputs,
                              std::vector<double>& output) const {
  const auto [outer, n, inner] = detail::axisSpan(inputs_[0]->shape(), axis_);
  const std::vector<double>& index = inputs[1];
  std::size_t k = 0;
  for (std::size_t o = 0; o < outer; ++o) {
    for (double raw : index) {
      long long j = static_cast<long long>(raw);
      if (j < 0) j += static_cast<long long>(n);
      if (j < 0 || j >= static_cast<long long>(n)) {
        throw Error(name_ + ": index " + std::to_string(static_cast<long long>(raw)) +
                    " is outside axis " + std::to_string(axis_) + " of size " +
                    std::to_string(n));
      }
      const double* row = &inputs[0][(o * n + static_cast<std::size_t>(j)) * inner];
      std::copy(row, row + inner, output.begin() + static_cast<std::ptrdiff_t>(k));
      k += inner;
    }
  }
}

namespace {

Shape gridSampleShape(const std::string& name, const Shape& data, const Shape& grid) {
  if (data.size() != 4 || grid.size() != 4 || grid[1] != 2 || grid[0] != data[0]) {
    throw Error(name + ": GridSample takes data [N, C, H, W] and a grid [N, 2, H_out, W_out], "
                "not " + shapeToString(data) + " and " + shapeToString(grid));
  }
  return {data[0], data[1], grid[2], grid[3]};
}

// ONNX's reflection of a coordinate into [low, high] (its reference implementation).
double reflect(double x, double low, double high) {
  const double range = high - low;
  if (range <= 0.0) return low;
  if (x < low) {
    const double d = low - x;
    const long long flips = static_cast<long long>(d / range);
    const double r = d - static_cast<double>(flips) * range;
    return flips % 2 == 0 ? low + r : high - r;
  }
  if (x > high) {
    const double d = x - high;
    const long long flips = static_cast<long long>(d / range);
    const double r = d - static_cast<double>(flips) * range;
    return flips % 2 == 0 ? high - r : low + r;
  }
  return x;
}

}  // namespace

HostGridSampleLayer::HostGridSampleLayer(std::string name, Tensor& data, Tensor& grid,
                                         GridSampleMode mode, GridSamplePadding padding,
                                         bool align_corners)
    : HostLayer(name, {&data, &grid}, gridSampleShape(name, data.shape(), grid.shape()),
                ElementType::kFloat),
      mode_(mode),
      padding_(padding),
      align_corners_(align_corners) {
  if (data.isInteger() || grid.isInteger()) {
    throw Error(name_ + ": GridSample samples float32 data at float32 positions");
  }
}

HostGridSampleLayer::HostGridSampleLayer(std::string name, Tensor& data, HostConstant grid,
                                         GridSampleMode mode, GridSamplePadding padding,
                                         bool align_corners)
    : HostLayer(name, {&data}, gridSampleShape(name, data.shape(), grid.shape),
                ElementType::kFloat),
      mode_(mode),
      padding_(padding),
      align_corners_(align_corners),
      grid_(&declareWeight("grid", CNML_CONST, grid.shape)) {
  if (data.isInteger()) throw Error(name_ + ": GridSample samples float32 data");
}

void HostGridSampleLayer::compute(const std::vector<std::vector<double>>& inputs,
                                  std::vector<double>& output) const {
  const Shape& d = inputs_[0]->shape();
  const long long channels = d[1], height = d[2], width = d[3];
  const long long out_h = output_.shape()[2], out_w = output_.shape()[3];
  const std::vector<double>& data = inputs[0];
  std::vector<double> constant;
  if (grid_) constant.assign(grid_->values().begin(), grid_->values().end());
  const std::vector<double>& grid = grid_ ? constant : inputs[1];
  // Pixel coordinates of -1 and 1 on an axis of `size` pixels, and where reflection folds.
  auto unnormalise = [&](double v, long long size) {
    return align_corners_ ? (v + 1.0) / 2.0 * static_cast<double>(size - 1)
                          : ((v + 1.0) * static_cast<double>(size) - 1.0) / 2.0;
  };
  auto bound = [&](double v, long long size) {
    if (padding_ == GridSamplePadding::kBorder)
      return std::clamp(v, 0.0, static_cast<double>(size - 1));
    if (padding_ == GridSamplePadding::kReflection) {
      return align_corners_ ? reflect(v, 0.0, static_cast<double>(size - 1))
                            : reflect(v, -0.5, static_cast<double>(size) - 0.5);
    }
    return v;
  };
  for (long long n = 0; n < d[0]; ++n) {
    for (long long c = 0; c < channels; ++c) {
      const double* image = data.data() + ((n * channels + c) * height) * width;
      auto pixel = [&](long long y, long long x) -> double {
        if (padding_ != GridSamplePadding::kZeros) {  // bounded already; rounding may step out
          y = std::clamp(y, 0LL, height - 1);
          x = std::clamp(x, 0LL, width - 1);
        } else if (y < 0 || y >= height || x < 0 || x >= width) {
          return 0.0;
        }
        return image[y * width + x];
      };
      for (long long i = 0; i < out_h; ++i) {
        for (long long j = 0; j < out_w; ++j) {
          const std::size_t at = static_cast<std::size_t>(((n * 2) * out_h + i) * out_w + j);
          const double x = bound(unnormalise(grid[at], width), width);
          const double y = bound(unnormalise(grid[at + static_cast<std::size_t>(out_h * out_w)],
                                             height), height);
          double value;
          if (mode_ == GridSampleMode::kNearest) {
            value = pixel(static_cast<long long>(std::nearbyint(y)),
                          static_cast<long long>(std::nearbyint(x)));
          } else {
            const double x0 = std::floor(x), y0 = std::floor(y);
            const double fx = x - x0, fy = y - y0;
            const long long xi = static_cast<long long>(x0), yi = static_cast<long long>(y0);
            value = (1.0 - fy) * ((1.0 - fx) * pixel(yi, xi) + fx * pixel(yi, xi + 1)) +
                    fy * ((1.0 - fx) * pixel(yi + 1, xi) + fx * pixel(yi + 1, xi + 1));
          }
          output[static_cast<std::size_t>(((n * channels + c) * out_h + i) * out_w + j)] = value;
        }
      }
    }
  }
}

}  // namespace pz

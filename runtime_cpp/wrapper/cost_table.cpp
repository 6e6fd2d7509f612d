// The layer-block cost table of cost_table.h, from the device model's op-block table.
#include "paleozoic/cost_table.h"

#include <algorithm>
#include <limits>
#include <map>

#include "paleozoic/fusion.h"

namespace pz {

std::vector<int> opLastUse(const std::vector<Layer*>& layers, const std::vector<int>& first) {
  const int n = static_cast<int>(layers.size());
  const int m = first.back();
  std::map<const Tensor*, int> index_of;
  for (int i = 0; i < n; ++i) index_of[&layers[i]->output()] = i;
  std::vector<int> last_use(n, -1), reads(n, 0);
  for (int c = 0; c < n; ++c) {
    for (Tensor* in : layers[c]->inputs()) {
      auto it = index_of.find(in);
      if (it == index_of.end()) continue;
      last_use[it->second] = std::max(last_use[it->second], c);
      ++reads[it->second];
    }
  }
  std::vector<int> op_last_use(m, 0);
  for (int i = 0; i < n; ++i) {
    const Tensor& out = layers[i]->output();
    const int last_op = first[i + 1] - 1;
    for (int k = first[i]; k < last_op; ++k) op_last_use[k] = last_op;
    if (leavesBlock(out, reads[i]))
      op_last_use[last_op] = m;  // needed after the list
    else
      op_last_use[last_op] = last_use[i] < 0 ? last_op : first[last_use[i] + 1] - 1;
  }
  return op_last_use;
}

std::vector<double> layerCostTable(const std::vector<double>& op_table,
                                   const std::vector<int>& first, std::size_t choices) {
  const int n = static_cast<int>(first.size()) - 1;
  const std::size_t m = static_cast<std::size_t>(first.back());
  const std::size_t k = choices;
  std::vector<double> out(static_cast<std::size_t>(n) * (n + 1) * k);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j <= n; ++j) {
      for (std::size_t q = 0; q < k; ++q) {
        double value;
        if (j <= i) {
          value = std::numeric_limits<double>::infinity();
        } else if (j == i + 1 && first[i + 1] - first[i] > 1) {
          value = 0.0;  // one several-op layer, compiled op by op
          for (int o = first[i]; o < first[i + 1]; ++o) {
            value += op_table[(static_cast<std::size_t>(o) * (m + 1) + o + 1) * k + q];
          }
        } else {
          value = op_table[(static_cast<std::size_t>(first[i]) * (m + 1) + first[j]) * k + q];
        }
        out[(static_cast<std::size_t>(i) * (n + 1) + j) * k + q] = value;
      }
    }
  }
  return out;
}

}  // namespace pz

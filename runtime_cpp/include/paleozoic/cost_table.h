// The device model's table of block times over a list of ops (cnml_mock.h,
// cnmlMockCostTable_V3) read as one over blocks of whole layers, as Block compiles them.
#ifndef PALEOZOIC_COST_TABLE_H_
#define PALEOZOIC_COST_TABLE_H_

#include <cstddef>
#include <vector>

#include "paleozoic/core.h"

namespace pz {

// `layers` (topological order) run ops [first[i], first[i + 1]) of the list of all their
// ops. Per op, the last op of the list that reads its result: an op inside a layer is read
// by the layer's last op; a layer's output by the last op of its last reader in the list,
// or first.back() (after the list) when it leaves the list's block (leavesBlock).
std::vector<int> opLastUse(const std::vector<Layer*>& layers, const std::vector<int>& first);

// From `op_table`, [m][m + 1][choices] with [a][b][q] the time of ops [a, b) as one block
// on choice q, the [n][n + 1][choices] table over layers: [i][j][q] the time of layers
// [i, j), ops [first[i], first[j]) fused; a single layer of several ops (j == i + 1) the sum
// of its ops alone (Block does not fuse one layer); infinity where j <= i.
std::vector<double> layerCostTable(const std::vector<double>& op_table,
                                   const std::vector<int>& first, std::size_t choices);

}  // namespace pz

#endif  // PALEOZOIC_COST_TABLE_H_

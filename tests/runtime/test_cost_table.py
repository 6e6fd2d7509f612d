"""The layer-block cost table's algorithm (runtime_cpp/include/paleozoic/cost_table.h,
behind Session.cost_table) in C++, by a small program against the installed wrapper, checked
against the rules written again here: which op last reads each op's result, and how a table
over op blocks becomes one over layer blocks."""

from __future__ import annotations

import math
from pathlib import Path

from helpers import cpp_program_output

# Layers a, b, c of the list (a: 2 ops, b: 1, c: 2, as `first` says) and d after it:
# a = relu(x), b = sigmoid(a) (a graph output), c = a + b, d = relu(c).
PROGRAM = r"""
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "paleozoic/cost_table.h"
#include "paleozoic/layer_registry.h"
#include "paleozoic/runtime.h"

static std::unique_ptr<pz::Layer> active(const std::string& name, pz::Tensor& in,
                                         const std::string& function) {
  pz::LayerArgs args(name);
  args.set("function", function);
  return pz::makeLayer("active", name, {&in}, args);
}

int main() {
  pz::Device device;
  pz::Tensor x("x", pz::Shape{1, 2, 3, 3});
  std::unique_ptr<pz::Layer> a = active("a", x, "relu");
  std::unique_ptr<pz::Layer> b = active("b", a->output(), "sigmoid");
  std::unique_ptr<pz::Layer> c =
      pz::makeLayer("add", "c", {&a->output(), &b->output()}, pz::LayerArgs("c"));
  std::unique_ptr<pz::Layer> d = active("d", c->output(), "relu");
  b->output().markGraphOutput();
  const std::vector<int> first{0, 2, 3, 5};
  std::printf("last_use");
  for (int op : pz::opLastUse({a.get(), b.get(), c.get()}, first)) std::printf(" %d", op);
  std::printf("\n");

  const std::size_t m = 5, k = 2;
  std::vector<double> ops(m * (m + 1) * k);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j <= m; ++j)
      for (std::size_t q = 0; q < k; ++q) ops[(i * (m + 1) + j) * k + q] = 100.0 * i + j + 0.5 * q;
  std::printf("table");
  for (double v : pz::layerCostTable(ops, first, k)) std::printf(" %.17g", v);
  std::printf("\n");
}
"""

FIRST = [0, 2, 3, 5]


def op_block(i: int, j: int, q: int) -> float:
    return 100.0 * i + j + 0.5 * q


def test_the_cost_table_algorithm_in_cpp(tmp_path: Path) -> None:
    lines = dict(line.split(" ", 1) for line in
                 cpp_program_output(PROGRAM, tmp_path, "Paleozoic::runtime").splitlines())
    # a's first op is read by a's last; a's output last by c (op 4); b's is a graph output,
    # needed after the list (5); c's first op by c's last; c's output by d, outside (5).
    assert [int(v) for v in lines["last_use"].split()] == [1, 4, 5, 4, 5]

    n, k = len(FIRST) - 1, 2
    expected = []
    for i in range(n):
        for j in range(n + 1):
            for q in range(k):
                if j <= i:
                    expected.append(math.inf)
                elif j == i + 1 and FIRST[j] - FIRST[i] > 1:  # one layer, its ops unfused
                    expected.append(sum(op_block(o, o + 1, q) for o in range(FIRST[i], FIRST[j])))
                else:
                    expected.append(op_block(FIRST[i], FIRST[j], q))
    assert [float(v) for v in lines["table"].split()] == expected

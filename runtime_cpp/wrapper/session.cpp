// Session helpers used by emitted main() functions.
#include "paleozoic/session.h"

#include <cnml_mock.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iomanip>
#include <ostream>
#include <string>

namespace pz {

SessionOptions parseSessionOptions(int argc, char** argv, std::size_t num_inputs) {
  SessionOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw Error("option " + flag + " needs a value; usage: " +
                                   std::string(argv[0]) +
                                   " [-w WEIGHTS] [-i INPUT.bin]... [-o OUTPUT_DIR] [-r REPEAT]"
                                   " [-p PROFILE]");
    const std::string value = argv[++i];
    if (flag == "-w") {
      options.weights = value;
    } else if (flag == "-i") {
      options.inputs.push_back(value);
    } else if (flag == "-o") {
      options.output_dir = value;
    } else if (flag == "-p") {
      options.profile = value;
    } else if (flag == "-r") {
      try {
        options.repeat = std::stoi(value);
      } catch (const std::exception&) {
        throw Error("option -r needs a positive integer, got '" + value + "'");
      }
      if (options.repeat < 1) throw Error("option -r needs a positive integer, got " + value);
    } else {
      throw Error("unknown option " + flag +
                  "; usage: session [-w WEIGHTS] [-i INPUT.bin]... [-o OUTPUT_DIR] [-r REPEAT] "
                  "[-p PROFILE]");
    }
  }
  if (!options.inputs.empty() && options.inputs.size() != num_inputs) {
    throw Error("the model has " + std::to_string(num_inputs) + " input(s) but " +
                std::to_string(options.inputs.size()) + " -i file(s) were given");
  }
  if (!options.profile.empty()) applyDeviceProfile(options.profile);
  return options;
}

void applyDeviceProfile(const std::string& path) {
  if (cnmlMockSetDeviceProfile(path.c_str()) != CNML_STATUS_SUCCESS) {
    throw Error(std::string("device profile: ") + cnmlMockLastError());
  }
}

void loadInputs(const SessionOptions& options, const std::vector<Tensor*>& inputs) {
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    Tensor& tensor = *inputs[i];
    std::vector<float> values = options.inputs.empty()
                                    ? std::vector<float>(tensor.elements(), 0.0f)
                                    : readFloatFile(options.inputs[i], tensor.elements());
    tensor.copyFromHost(values.data(), values.size());
  }
}

void saveOutputs(const SessionOptions& options, const std::vector<Tensor*>& outputs) {
  for (Tensor* tensor : outputs) {
    std::vector<float> values(tensor->elements());
    tensor->copyToHost(values.data(), values.size());
    writeFloatFile(options.output_dir + "/" + tensor->name() + ".bin", values);
  }
}

void runBlocks(std::vector<Block>& blocks, cnrtQueue_t queue) {
  for (Block& block : blocks) block.run(queue);
}

double runRepeated(std::vector<Block>& blocks, cnrtQueue_t queue, int repeat) {
  std::vector<double> walls;
  for (int run = 0; run < repeat; ++run) {
    const auto start = std::chrono::steady_clock::now();
    runBlocks(blocks, queue);
    walls.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  std::sort(walls.begin(), walls.end());
  return walls[walls.size() / 2];
}

void printTimings(const std::vector<Block>& blocks, double wall_ms, std::ostream& out) {
  double total_us = 0.0;
  out << std::left << std::setw(16) << "block" << std::setw(6) << "fuse" << std::setw(5)
      << "mp" << std::setw(6) << "prec" << std::right << std::setw(14) << "device us" << "\n";
  for (const Block& block : blocks) {
    out << std::left << std::setw(16) << block.name() << std::setw(6)
        << (block.fuse() ? "yes" : "no") << std::setw(5) << block.mp() << std::setw(6)
        << precisionName(block.precision()) << std::right << std::setw(14) << std::fixed
        << std::setprecision(1) << block.lastDeviceMicros() << "\n";
    total_us += block.lastDeviceMicros();
  }
  out << "total device time: " << std::fixed << std::setprecision(1) << total_us
      << " us (SDK notifiers: simulated on the mock, wall clock on oneDNN); wall time: " << std::setprecision(2) << wall_ms
      << " ms (median run)\n";
}

}  // namespace pz

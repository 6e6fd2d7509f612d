// Session helpers used by emitted main() functions.
#include "paleozoic/session.h"

#include <cnml_mock.h>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <cstdio>
#include <exception>
#include <iomanip>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <thread>

namespace pz {
namespace {

int positiveInt(const std::string& flag, const std::string& value) {
  std::size_t used = 0;
  int n = 0;
  try {
    n = std::stoi(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || n < 1) {
    throw Error("option " + flag + " needs a positive integer, got '" + value + "'");
  }
  return n;
}

}  // namespace

SessionOptions parseSessionOptions(int argc, char** argv, std::size_t num_inputs) {
  SessionOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw Error("option " + flag + " needs a value; usage: " +
                                   std::string(argv[0]) +
                                   " [-w WEIGHTS] [-i INPUT.bin]... [-o OUTPUT_DIR] [-r REPEAT]"
                                   " [-p PROFILE] [-s SESSIONS]");
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
      options.repeat = positiveInt(flag, value);
    } else if (flag == "-s") {
      options.sessions = positiveInt(flag, value);
    } else {
      throw Error("unknown option " + flag +
                  "; usage: session [-w WEIGHTS] [-i INPUT.bin]... [-o OUTPUT_DIR] [-r REPEAT] "
                  "[-p PROFILE] [-s SESSIONS]");
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

namespace {

std::size_t fileElementSize(ElementType type) {
  return type == ElementType::kInt64 ? 8 : type == ElementType::kUint8 ? 1 : 4;
}

// An integer input file: raw little-endian values of the tensor's element type (int64 token
// ids and masks, int32, uint8 pixels), as numpy's tofile writes them.
std::vector<std::int64_t> readIntFile(const std::string& path, const Tensor& tensor) {
  const std::size_t size = fileElementSize(tensor.elementType());
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw Error("input file '" + path + "' cannot be opened (missing or unreadable)");
  const std::streamoff bytes = in.tellg();
  const std::size_t expected = tensor.elements() * size;
  if (bytes < 0 || static_cast<std::size_t>(bytes) != expected) {
    throw Error("input file '" + path + "' holds " + std::to_string(bytes) + " bytes, expected " +
                std::to_string(expected) + " (" + std::to_string(tensor.elements()) + " " +
                elementTypeName(tensor.elementType()) + " values for " + tensor.name() + ")");
  }
  std::vector<unsigned char> raw(expected);
  in.seekg(0);
  if (expected > 0 && !in.read(reinterpret_cast<char*>(raw.data()),
                               static_cast<std::streamsize>(expected))) {
    throw Error("input file '" + path + "': read failed");
  }
  std::vector<std::int64_t> values(tensor.elements());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const unsigned char* p = raw.data() + i * size;
    if (size == 8) {
      std::int64_t v;
      std::memcpy(&v, p, 8);
      values[i] = v;
    } else if (size == 4) {
      std::int32_t v;
      std::memcpy(&v, p, 4);
      values[i] = v;
    } else {
      values[i] = *p;
    }
  }
  return values;
}

}  // namespace

void loadInputs(const SessionOptions& options, const std::vector<Tensor*>& inputs) {
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    Tensor& tensor = *inputs[i];
    if (tensor.isInteger()) {
      const std::vector<std::int64_t> values =
          options.inputs.empty() ? std::vector<std::int64_t>(tensor.elements(), 0)
                                 : readIntFile(options.inputs[i], tensor);
      tensor.setInts(values.data(), values.size());
      continue;
    }
    std::vector<float> values = options.inputs.empty()
                                    ? std::vector<float>(tensor.elements(), 0.0f)
                                    : readFloatFile(options.inputs[i], tensor.elements());
    tensor.copyFromHost(values.data(), values.size());
  }
}

void saveOutputs(const SessionOptions& options, const std::vector<Tensor*>& outputs) {
  for (Tensor* tensor : outputs) {
    if (tensor->isInteger()) {  // ArgMax indices: int64, as onnxruntime gives them
      const std::vector<std::int64_t>& ints = tensor->ints();
      const std::string path = options.output_dir + "/" + tensor->name() + ".bin";
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(ints.data()),
                static_cast<std::streamsize>(ints.size() * sizeof(std::int64_t)));
      if (!out) throw Error("output file '" + path + "' cannot be written");
      continue;
    }
    std::vector<float> values(tensor->elements());
    tensor->copyToHost(values.data(), values.size());
    writeFloatFile(options.output_dir + "/" + tensor->name() + ".bin", values);
  }
}

void runBlocks(std::vector<Block>& blocks, cnrtQueue_t queue) {
  for (Block& block : blocks) block.run(queue);
}

void runBlocks(std::vector<Block>& blocks, std::vector<Stage>& stages, cnrtQueue_t queue) {
  std::map<const Block*, Stage*> stage_of;
  for (Stage& stage : stages)
    for (const Block* block : stage.blocks()) stage_of[block] = &stage;
  for (Block& block : blocks) {
    const auto in_stage = stage_of.find(&block);
    if (in_stage == stage_of.end()) {
      block.run(queue);
    } else if (in_stage->second->blocks().front() == &block) {
      in_stage->second->run();
    }
  }
}

double peakResidentMb() {
  // Linux: VmHWM, the high-water mark of this address space. getrusage's ru_maxrss would
  // carry the parent's over fork and exec (a session started from a large Python process).
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) / 1024.0;
  }
  rusage usage{};  // elsewhere: the process's, in KiB as Linux and BSD report it
  return getrusage(RUSAGE_SELF, &usage) == 0 ? static_cast<double>(usage.ru_maxrss) / 1024.0
                                             : 0.0;
}

bool conditionHolds(Tensor& condition) {
  if (condition.elements() != 1) {
    throw Error("tensor " + condition.name() + ": an If's condition has one element, not " +
                std::to_string(condition.elements()));
  }
  if (condition.isInteger()) return condition.ints().at(0) != 0;
  float value = 0.0f;
  condition.copyToHost(&value, 1);
  return value != 0.0f;
}

double runRepeated(const std::function<void()>& forward, int repeat) {
  std::vector<double> walls;
  for (int run = 0; run < repeat; ++run) {
    const auto start = std::chrono::steady_clock::now();
    forward();
    walls.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  std::sort(walls.begin(), walls.end());
  return walls[walls.size() / 2];
}

void printTimings(const std::vector<Block>& blocks, double wall_ms, std::ostream& out) {
  printTimings(blocks, {}, wall_ms, out);
}

void printTimings(const std::vector<Block>& blocks, const std::vector<Stage>& stages,
                  double wall_ms, std::ostream& out) {
  std::map<const Block*, const Stage*> stage_of;
  for (const Stage& stage : stages)
    for (const Block* block : stage.blocks()) stage_of[block] = &stage;
  double total_us = 0.0;
  out << std::left << std::setw(16) << "block" << std::setw(6) << "fuse" << std::setw(5)
      << "mp" << std::setw(6) << "prec" << std::right << std::setw(14) << "device us" << "\n";
  for (const Block& block : blocks) {
    out << std::left << std::setw(16) << block.name() << std::setw(6)
        << (block.fuse() ? "yes" : "no") << std::setw(5) << block.mp() << std::setw(6)
        << precisionName(block.precision()) << std::right << std::setw(14) << std::fixed
        << std::setprecision(1) << block.lastDeviceMicros();
    const auto in_stage = stage_of.find(&block);
    if (in_stage == stage_of.end()) {
      total_us += block.lastDeviceMicros();
    } else {
      const Stage& stage = *in_stage->second;
      out << "  " << stage.name();  // its blocks ran at once: the stage counts once
      if (stage.blocks().front() == &block) total_us += stage.lastDeviceMicros();
    }
    out << "\n";
  }
  out << "total device time: " << std::fixed << std::setprecision(1) << total_us
      << " us (SDK notifiers: simulated on the mock, wall clock on oneDNN); wall time: " << std::setprecision(2) << wall_ms
      << " ms (median run)\n";
  // Frames a forward runs: the batch of the first block's input, split among the groups of
  // its data parallelism.
  if (!blocks.empty() && !blocks.front().sequence().empty() && total_us > 0.0) {
    const Block& first = blocks.front();
    const std::vector<Tensor*>& in = first.sequence().front()->inputs();
    const int frames = in.empty() || in.front()->shape().empty() ? 1 : in.front()->shape()[0];
    out << "throughput: " << std::setprecision(1) << frames * 1e6 / total_us
        << " frames/s of device time (batch " << frames << ", data parallelism "
        << first.dataParallelism() << ")\n";
  }
  const double peak_mb = peakResidentMb();
  if (peak_mb > 0.0)
    out << "peak resident memory: " << std::setprecision(1) << peak_mb << " MB (this process)\n";
  printImplementations(blocks, out);
}

namespace {

// A tensor's values as bytes: what a run wrote, for comparing runs bit for bit.
std::vector<unsigned char> snapshot(Tensor& tensor) {
  if (tensor.isInteger()) {
    const std::vector<std::int64_t>& ints = tensor.ints();
    const auto* p = reinterpret_cast<const unsigned char*>(ints.data());
    return {p, p + ints.size() * sizeof(std::int64_t)};
  }
  std::vector<float> values(tensor.elements());
  tensor.copyToHost(values.data(), values.size());
  const auto* p = reinterpret_cast<const unsigned char*>(values.data());
  return {p, p + values.size() * sizeof(float)};
}

}  // namespace

void runConcurrentSessions(const SessionOptions& options, const Arena* plan,
                           const std::vector<Tensor*>& inputs,
                           const std::vector<Tensor*>& outputs,
                           const std::function<void()>& forward, std::ostream& out) {
  const int n = options.sessions;
  if (n < 2) return;
  std::vector<std::vector<unsigned char>> serial;
  for (Tensor* tensor : outputs) serial.push_back(snapshot(*tensor));
  std::vector<std::unique_ptr<RunContext>> contexts;
  for (int i = 0; i < n; ++i) contexts.push_back(std::make_unique<RunContext>(plan));
  std::vector<std::exception_ptr> failed(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      const std::size_t k = static_cast<std::size_t>(i);
      try {
        contexts[k]->run([&] {
          loadInputs(options, inputs);
          for (int r = 0; r < options.repeat; ++r) forward();
          for (std::size_t j = 0; j < outputs.size(); ++j) {
            if (snapshot(*outputs[j]) != serial[j]) {
              throw Error("concurrent session " + std::to_string(i) + ": output " +
                          outputs[j]->name() + " differs from the serial run's");
            }
          }
        });
      } catch (...) {
        failed[k] = std::current_exception();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  const double wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  for (const std::exception_ptr& e : failed)
    if (e) std::rethrow_exception(e);
  const int runs = n * options.repeat;
  out << "concurrent sessions: " << n << " over one set of compiled blocks (weights held once, "
      << "an arena of " << std::fixed << std::setprecision(1)
      << (plan != nullptr ? static_cast<double>(plan->bytes()) / 1e6 : 0.0)
      << " MB each), " << runs << " runs in " << std::setprecision(2) << wall_ms << " ms ("
      << std::setprecision(1) << runs * 1000.0 / wall_ms
      << " runs/s); outputs bit-identical to the serial run\n";
  const double peak_mb = peakResidentMb();
  if (peak_mb > 0.0)
    out << "peak resident memory: " << std::setprecision(1) << peak_mb << " MB (this process)\n";
}

namespace {

// A slow path a user should see before measuring: the SDK's own C++ kernels on an SDK whose
// library computes the rest, or one of oneDNN's reference implementations ("ref:any"; its
// gemm-based RNN is named "rnn ref" and is not one).
bool slowPath(const std::string& implementation, bool library) {
  if (implementation.rfind("mock kernel", 0) == 0) return library;
  return implementation.find("ref:") != std::string::npos;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> implementations(const Block& block) {
  std::vector<std::pair<std::string, std::string>> ops;
  for (Layer* layer : block.sequence()) {
    if (layer->onHost()) {
      ops.emplace_back(layer->name(), "host");
      continue;
    }
    for (cnmlBaseOp_t op : layer->ops()) {
      const char* text = cnmlMockOpImplementation(op);
      ops.emplace_back(layer->name(), text ? text : "?");
    }
  }
  return ops;
}

void printImplementations(const std::vector<Block>& blocks, std::ostream& out) {
  std::map<std::string, int> count;
  std::vector<std::pair<std::string, std::string>> ops;  // (layer, implementation)
  for (const Block& block : blocks) {
    const auto mine = implementations(block);
    ops.insert(ops.end(), mine.begin(), mine.end());
  }
  for (const auto& op : ops) ++count[op.second];
  std::vector<std::pair<int, std::string>> ranked;
  bool library = false;
  for (const auto& [text, n] : count) {
    ranked.emplace_back(-n, text);
    library = library || (text.rfind("mock kernel", 0) != 0 && text != "host");
  }
  std::sort(ranked.begin(), ranked.end());
  out << "kernels (SDK ops on each):";
  for (const auto& [n, text] : ranked) out << "\n  " << std::setw(5) << -n << "  " << text;
  out << "\n";
  std::vector<std::string> slow;
  for (const auto& [layer, text] : ops)
    if (slowPath(text, library) &&
        (slow.empty() || slow.back() != layer + " (" + text + ")"))
      slow.push_back(layer + " (" + text + ")");
  if (!slow.empty()) {
    out << "slow paths (" << slow.size() << " layer(s) not on the library's fast kernels):";
    for (const std::string& s : slow) out << "\n  " << s;
    out << "\n";
  }
}

}  // namespace pz

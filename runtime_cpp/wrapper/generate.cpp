// The generation loop's helpers: command line, the KV cache window, the token choice.
#include "paleozoic/generate.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <sstream>

#include "paleozoic/session.h"

namespace pz {

namespace {

std::vector<std::int64_t> parseIds(const std::string& text) {
  std::vector<std::int64_t> ids;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0') {
      throw Error("-t takes token ids separated by commas, got '" + text + "'");
    }
    ids.push_back(v);
  }
  return ids;
}

long long parseInteger(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0') throw Error("" + flag + " takes an integer");
  return v;
}

std::size_t elementsOf(const Shape& shape) {
  return static_cast<std::size_t>(elementCount(shape));
}

}  // namespace

GenerateOptions parseGenerateOptions(int argc, char** argv) {
  GenerateOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw Error("" + flag + " needs a value");
    const std::string value = argv[++i];
    if (flag == "-t") {
      options.prompt = parseIds(value);
    } else if (flag == "-n") {
      options.new_tokens = static_cast<int>(parseInteger(flag, value));
    } else if (flag == "-w") {
      options.weights = value;
    } else if (flag == "-k") {
      options.top_k = static_cast<int>(parseInteger(flag, value));
    } else if (flag == "-T") {
      options.temperature = std::strtof(value.c_str(), nullptr);
    } else if (flag == "-s") {
      options.seed = static_cast<std::uint64_t>(parseInteger(flag, value));
    } else if (flag == "-o") {
      options.output = value;
    } else if (flag == "-p") {
      options.profile = value;
    } else {
      throw Error("unknown option " + flag + "; usage: generate -t ID,ID,... "
                  "[-n NEW_TOKENS] [-w WEIGHTS] [-k TOP_K] [-T TEMPERATURE] [-s SEED] "
                  "[-o OUT.bin] [-p PROFILE]");
    }
  }
  if (options.prompt.empty()) throw Error("give the prompt's token ids with -t");
  if (options.new_tokens < 1) throw Error("-n must be at least 1");
  if (options.top_k < 0) throw Error("-k must be 0 (greedy) or more");
  if (!(options.temperature > 0.0f)) throw Error("-T must be above 0");
  if (!options.profile.empty()) applyDeviceProfile(options.profile);
  return options;
}

KvWindow::KvWindow(std::vector<Shape> shapes, int window)
    : shapes_(std::move(shapes)), window_(window), mask_(static_cast<std::size_t>(window), 0) {
  for (const Shape& shape : shapes_) {
    if (shape.size() != 4 || shape[0] != 1 || shape[2] != window) {
      throw Error("KvWindow: a cache tensor must be [1, heads, " + std::to_string(window) +
                  ", dim], got " + shapeToString(shape));
    }
    values_.emplace_back(elementsOf(shape), 0.0f);
  }
}

std::vector<std::int64_t> KvWindow::startPrompt(int count) {
  if (count < 1 || count >= window_) {
    throw Error("a prefill of " + std::to_string(count) + " tokens does not fit a " +
                "window of " + std::to_string(window_) + " slots");
  }
  std::fill(mask_.begin(), mask_.end(), 0);
  std::fill(mask_.end() - count, mask_.end(), 1);
  filled_ = count;
  std::vector<std::int64_t> positions(static_cast<std::size_t>(count));
  std::iota(positions.begin(), positions.end(), std::int64_t{0});
  return positions;
}

void KvWindow::advance() {
  if (filled_ >= window_) {
    throw Error("the KV window of " + std::to_string(window_) + " slots is full; " +
                "recompile with a larger --max-length");
  }
  std::rotate(mask_.begin(), mask_.begin() + 1, mask_.end());
  mask_.back() = 1;
  ++filled_;
}

void KvWindow::copyPast(std::size_t i, Tensor& past) const {
  const Shape& shape = shapes_.at(i);
  const std::size_t heads = static_cast<std::size_t>(shape[1]),
                    dim = static_cast<std::size_t>(shape[3]),
                    window = static_cast<std::size_t>(window_);
  if (past.elements() != heads * (window - 1) * dim) {
    throw Error(past.name() + ": a step's past is " + std::to_string(window - 1) +
                " slots of the KV window, the tensor is " + shapeToString(past.shape()));
  }
  std::vector<float> slots(heads * (window - 1) * dim);
  for (std::size_t h = 0; h < heads; ++h) {
    // Slots 1..window-1 of each head: the first slot leaves with this step.
    const float* from = &values_[i][(h * window + 1) * dim];
    std::copy(from, from + (window - 1) * dim, &slots[h * (window - 1) * dim]);
  }
  past.copyFromHost(slots.data(), slots.size());
}

void KvWindow::store(std::size_t i, Tensor& present) {
  if (present.elements() != values_.at(i).size()) {
    throw Error(present.name() + ": a present output must fill the KV window " +
                shapeToString(shapes_.at(i)) + ", it is " + shapeToString(present.shape()));
  }
  present.copyToHost(values_[i].data(), values_[i].size());
}

TokenPicker::TokenPicker(const GenerateOptions& options)
    : top_k_(options.top_k), temperature_(options.temperature), rng_(options.seed) {}

std::int64_t TokenPicker::pick(const float* logits, std::size_t vocab) {
  if (top_k_ == 0) {  // greedy: the first of equal largest values, as numpy's argmax
    return static_cast<std::int64_t>(std::max_element(logits, logits + vocab) - logits);
  }
  const std::size_t k = std::min(static_cast<std::size_t>(top_k_), vocab);
  std::vector<std::size_t> order(vocab);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                    [&](std::size_t a, std::size_t b) {
                      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
                    });
  std::vector<double> weights(k);
  for (std::size_t j = 0; j < k; ++j) {
    weights[j] = std::exp((static_cast<double>(logits[order[j]]) - logits[order[0]]) /
                          temperature_);
  }
  std::discrete_distribution<std::size_t> choose(weights.begin(), weights.end());
  return static_cast<std::int64_t>(order[choose(rng_)]);
}

double deviceMilliseconds(const std::vector<Block>& blocks) {
  double us = 0.0;
  for (const Block& block : blocks) us += block.lastDeviceMicros();
  return us / 1000.0;
}

std::vector<float> lastLogits(Tensor& logits) {
  const Shape& shape = logits.shape();
  if (shape.size() != 3 || shape[0] != 1) {
    throw Error(logits.name() + ": logits must be [1, tokens, vocab], got " +
                shapeToString(shape));
  }
  std::vector<float> all(logits.elements());
  logits.copyToHost(all.data(), all.size());
  const std::size_t vocab = static_cast<std::size_t>(shape[2]);
  return std::vector<float>(all.end() - static_cast<std::ptrdiff_t>(vocab), all.end());
}

void saveTokens(const std::string& path, const std::vector<std::int64_t>& tokens) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(tokens.data()),
            static_cast<std::streamsize>(tokens.size() * sizeof(std::int64_t)));
  if (!out) throw Error("cannot write " + path);
}

}  // namespace pz

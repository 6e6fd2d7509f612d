// Raw little-endian float32 files (session inputs and reference outputs).
#include <fstream>

#include "detail.h"

namespace pz {

std::vector<float> readFloatFile(const std::string& path, std::size_t count) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw Error("float file '" + path + "' cannot be opened (missing or unreadable)");
  const std::streamoff size = in.tellg();
  const std::size_t expected = count * sizeof(float);
  if (size < 0 || static_cast<std::size_t>(size) != expected) {
    throw Error("float file '" + path + "' holds " + std::to_string(size) + " bytes, expected " +
                std::to_string(expected) + " (" + std::to_string(count) + " float32 values)");
  }
  std::vector<float> values(count);
  in.seekg(0);
  if (count > 0 && !in.read(reinterpret_cast<char*>(values.data()),
                            static_cast<std::streamsize>(expected))) {
    throw Error("float file '" + path + "': read failed");
  }
  return values;
}

void writeFloatFile(const std::string& path, const std::vector<float>& values) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error("float file '" + path + "' cannot be created");
  out.write(reinterpret_cast<const char*>(values.data()),
            static_cast<std::streamsize>(values.size() * sizeof(float)));
  if (!out) throw Error("float file '" + path + "': write failed");
}

}  // namespace pz

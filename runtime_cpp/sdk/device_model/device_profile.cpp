#include "device_profile.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <stdexcept>

namespace pz_sdk {
namespace {

struct Field {
  const char* key;
  double min;  // values must be > min (or >= 1 for cores)
  double DeviceProfile::*value;
};

const Field kFields[] = {
    {"clock_ghz", 0.0, &DeviceProfile::clock_ghz},
    {"peak_fp16_tflops", 0.0, &DeviceProfile::peak_fp16_tflops},
    {"peak_int8_tops", 0.0, &DeviceProfile::peak_int8_tops},
    {"fp32_rate", 0.0, &DeviceProfile::fp32_rate},
    {"compute_efficiency", 0.0, &DeviceProfile::compute_efficiency},
    {"dram_gbps", 0.0, &DeviceProfile::dram_gbps},
    {"dram_efficiency", 0.0, &DeviceProfile::dram_efficiency},
    {"dram_channels", 0.0, &DeviceProfile::dram_channels},
    {"dram_bytes", 0.0, &DeviceProfile::dram_bytes},
    {"launch_us", -1.0, &DeviceProfile::launch_us},
    {"sync_us_per_log2_core", -1.0, &DeviceProfile::sync_us_per_log2_core},
    {"onchip_bytes_per_core", -1.0, &DeviceProfile::onchip_bytes_per_core},
    {"halo_exchange_ratio", -1.0, &DeviceProfile::halo_exchange_ratio},
    {"host_link_gbps", 0.0, &DeviceProfile::host_link_gbps},
    {"sparse_skip_efficiency", -1.0, &DeviceProfile::sparse_skip_efficiency},
    {"sparse_index_bits", -1.0, &DeviceProfile::sparse_index_bits},
    {"host_convert_gbps", 0.0, &DeviceProfile::host_convert_gbps},
};

std::string trim(const std::string& s) {
  const char* ws = " \t\r\n";
  std::size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

DeviceProfile& profileStorage() {
  static DeviceProfile profile;
  return profile;
}

}  // namespace

std::vector<std::pair<std::string, double>> DeviceProfile::items() const {
  std::vector<std::pair<std::string, double>> out;
  out.emplace_back("cores", static_cast<double>(cores));
  for (const Field& f : kFields) out.emplace_back(f.key, this->*(f.value));
  return out;
}

DeviceProfile parseDeviceProfile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open device profile");
  DeviceProfile profile;
  std::map<std::string, int> seen;  // key -> line
  std::string raw;
  int line_no = 0;
  while (std::getline(in, raw)) {
    ++line_no;
    const std::string where = path + ":" + std::to_string(line_no) + ": ";
    std::string line = trim(raw.substr(0, raw.find('#')));
    if (line.empty()) continue;
    std::size_t eq = line.find('=');
    if (eq == std::string::npos)
      throw std::runtime_error(where + "expected `key = value`, got '" + line + "'");
    const std::string key = trim(line.substr(0, eq));
    const std::string text = trim(line.substr(eq + 1));
    if (seen.count(key))
      throw std::runtime_error(where + "key '" + key + "' given twice (first on line " +
                               std::to_string(seen[key]) + ")");
    char* end = nullptr;
    errno = 0;
    const double value = text.empty() ? NAN : std::strtod(text.c_str(), &end);
    if (text.empty() || errno != 0 || *end != '\0' || !std::isfinite(value))
      throw std::runtime_error(where + "'" + key + "' needs a number, got '" + text + "'");
    if (key == "cores") {
      if (value < 1 || value > 1024 || value != std::floor(value))
        throw std::runtime_error(where + "'cores' needs an integer in 1..1024, got '" + text +
                                 "'");
      profile.cores = static_cast<int>(value);
    } else {
      const Field* field = nullptr;
      for (const Field& f : kFields)
        if (key == f.key) field = &f;
      if (!field) {
        std::string known = "cores";
        for (const Field& f : kFields) known += std::string(", ") + f.key;
        throw std::runtime_error(where + "unknown key '" + key + "' (known: " + known + ")");
      }
      if (field->min == 0.0 ? !(value > 0.0) : !(value >= 0.0))
        throw std::runtime_error(where + "'" + key + "' must be " +
                                 (field->min == 0.0 ? "> 0" : ">= 0") + ", got '" + text + "'");
      profile.*(field->value) = value;
    }
    seen[key] = line_no;
  }
  for (const auto& item : DeviceProfile().items())
    if (!seen.count(item.first))
      throw std::runtime_error(path + ": key '" + item.first + "' is missing");
  return profile;
}

// Not synchronised: set the profile before compiling, as the mock's API documents.
const DeviceProfile& currentProfile() { return profileStorage(); }

void setCurrentProfile(const DeviceProfile& profile) { profileStorage() = profile; }

}  // namespace pz_sdk

// WeightFile: reader of the checked binary weights file written by paleozoic/codegen/weights.py.
#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>
#include <sstream>

#include "detail.h"

namespace pz {
namespace {

constexpr char kMagic[8] = {'P', 'Z', 'W', 'E', 'I', 'G', 'H', 'T'};
constexpr std::uint32_t kVersion = 1;
constexpr std::uint8_t kFloat32 = 1;
constexpr std::size_t kModelIdBytes = 16;
constexpr std::uint64_t kDataAlignment = 64;

// CRC-32 with the zlib (IEEE 802.3, reflected 0xEDB88320) polynomial, table driven.
std::uint32_t crc32(const unsigned char* data, std::size_t size) {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1U) ? 0xEDB88320U ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  std::uint32_t crc = 0xFFFFFFFFU;
  for (std::size_t i = 0; i < size; ++i) crc = table[(crc ^ data[i]) & 0xFFU] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFU;
}

std::string hex(const unsigned char* data, std::size_t size) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < size; ++i) {
    out += digits[data[i] >> 4];
    out += digits[data[i] & 0xF];
  }
  return out;
}

std::string lower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

std::string crcHex(std::uint32_t v) {
  std::ostringstream out;
  out << "0x" << std::hex << v;
  return out.str();
}

// Little-endian reader over the file bytes; running past the end is a truncation error.
class Reader {
 public:
  // `bytes`: the file's first bytes (its header), of `file_bytes` in all.
  Reader(const std::string& path, const std::vector<unsigned char>& bytes,
         std::uint64_t file_bytes)
      : path_(path), bytes_(bytes), file_bytes_(file_bytes) {}

  std::size_t pos() const { return pos_; }

  const unsigned char* take(std::size_t n, const std::string& what) {
    if (bytes_.size() - pos_ < n) {
      throw Error("weights file '" + path_ + "' is truncated: expected " + std::to_string(n) +
                  " bytes of " + what + " at offset " + std::to_string(pos_) + ", found " +
                  std::to_string(bytes_.size() - pos_) + " (file has " +
                  std::to_string(file_bytes_) + " bytes) -- re-run paleozoic compile");
    }
    const unsigned char* p = bytes_.data() + pos_;
    pos_ += n;
    return p;
  }

  std::uint64_t uint(std::size_t n, const std::string& what) {
    const unsigned char* p = take(n, what);
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
    return v;
  }

 private:
  const std::string& path_;
  const std::vector<unsigned char>& bytes_;
  std::uint64_t file_bytes_;
  std::size_t pos_ = 0;
};

std::ifstream openFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error("weights file '" + path +
                "' cannot be opened (missing or unreadable); expected the .weights file written "
                "next to the session by paleozoic compile");
  }
  return in;
}

// `bytes` bytes of the file from `offset` into `into`; false when the read falls short.
bool readAt(std::ifstream& in, std::uint64_t offset, void* into, std::uint64_t bytes) {
  in.clear();
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(static_cast<char*>(into), static_cast<std::streamsize>(bytes));
  return static_cast<std::uint64_t>(in.gcount()) == bytes;
}

void checkCrc(const std::string& path, const std::string& name, const float* data,
              std::uint64_t nbytes, std::uint32_t crc) {
  const std::uint32_t actual = crc32(reinterpret_cast<const unsigned char*>(data), nbytes);
  if (actual != crc) {
    throw Error("weights file '" + path + "': checksum mismatch in tensor '" + name +
                "': expected " + crcHex(crc) + " (stored), computed " + crcHex(actual) +
                " -- the file is corrupt; re-run paleozoic compile");
  }
}

// `nbytes` bytes of tensor `name` at `offset` of the file into `into`, checked.
void readTensor(const std::string& path, const std::string& name, std::uint64_t offset,
                std::uint64_t nbytes, std::uint32_t crc, float* into) {
  std::ifstream in = openFile(path);
  if (!readAt(in, offset, into, nbytes)) {
    throw Error("weights file '" + path + "': tensor '" + name +
                "' could not be read (the file changed since it was opened?) -- re-run "
                "paleozoic compile");
  }
  checkCrc(path, name, into, nbytes, crc);
}

// Bytes in the fixed part of the header, up to and including data_offset.
constexpr std::size_t kFixedHeader = sizeof(kMagic) + 4 + 4 + kModelIdBytes + 8;

}  // namespace

WeightFile::WeightFile(const std::string& path, const std::string& model_id_hex,
                       Residency residency)
    : path_(path), residency_(residency) {
  std::ifstream in = openFile(path);
  in.seekg(0, std::ios::end);
  const std::uint64_t file_bytes = static_cast<std::uint64_t>(in.tellg());
  // The header: its fixed part says where the data starts, and the table ends before it.
  std::vector<unsigned char> bytes(static_cast<std::size_t>(
      std::min<std::uint64_t>(file_bytes, kFixedHeader)));
  readAt(in, 0, bytes.data(), bytes.size());
  if (bytes.size() == kFixedHeader) {
    std::uint64_t declared = 0;
    for (int i = 7; i >= 0; --i) declared = (declared << 8) | bytes[kFixedHeader - 8 + i];
    bytes.resize(static_cast<std::size_t>(std::min(file_bytes, std::max<std::uint64_t>(
                                                                   declared, kFixedHeader))));
    readAt(in, 0, bytes.data(), bytes.size());
  }
  const std::string where = "weights file '" + path + "'";
  const std::size_t magic_len = std::min(bytes.size(), sizeof(kMagic));
  if (magic_len < sizeof(kMagic) || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    throw Error(where + " is not a Paleozoic weights file: expected magic \"PZWEIGHT\", found \"" +
                std::string(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(magic_len)) +
                "\"");
  }
  Reader r(path, bytes, file_bytes);
  r.take(sizeof(kMagic), "magic");
  const std::uint64_t version = r.uint(4, "version");
  if (version != kVersion) {
    throw Error(where + " has format version " + std::to_string(version) + ", expected " +
                std::to_string(kVersion) + " -- re-run paleozoic compile with this runtime");
  }
  const std::uint64_t count = r.uint(4, "tensor count");
  const unsigned char* model_id = r.take(kModelIdBytes, "model id");
  const std::uint64_t data_offset = r.uint(8, "data offset");

  std::vector<std::uint64_t> dtypes;
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::string what = "tensor table entry " + std::to_string(i);
    const std::size_t name_len = static_cast<std::size_t>(r.uint(2, what));
    const unsigned char* name_ptr = r.take(name_len, what + " (name)");
    std::string name(reinterpret_cast<const char*>(name_ptr), name_len);
    const std::uint64_t dtype = r.uint(1, what);
    const std::uint64_t ndim = r.uint(1, what);
    Entry entry{};
    for (std::uint64_t d = 0; d < ndim; ++d) {
      entry.shape.push_back(static_cast<int>(r.uint(4, what + " (dims)")));
    }
    entry.offset = r.uint(8, what);
    entry.nbytes = r.uint(8, what);
    entry.crc = static_cast<std::uint32_t>(r.uint(4, what));
    dtypes.push_back(dtype);
    entries_.emplace_back(std::move(name), std::move(entry));
  }
  const std::size_t header_end = r.pos();
  const std::uint32_t header_crc = static_cast<std::uint32_t>(r.uint(4, "header checksum"));
  const std::uint32_t actual_header_crc = crc32(bytes.data(), header_end);
  if (header_crc != actual_header_crc) {
    throw Error(where + ": header checksum mismatch: expected " + crcHex(header_crc) +
                " (stored), computed " + crcHex(actual_header_crc) +
                " -- the file is corrupt; re-run paleozoic compile");
  }
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const std::string& name = entries_[i].first;
    const Entry& e = entries_[i].second;
    if (dtypes[i] != kFloat32) {
      throw Error(where + ": tensor '" + name + "' has dtype code " + std::to_string(dtypes[i]) +
                  ", expected 1 (float32)");
    }
    if (e.nbytes != elementCount(e.shape) * sizeof(float) || e.offset % 4 != 0) {
      throw Error(where + ": tensor '" + name + "' of shape " + shapeToString(e.shape) +
                  " is stored as " + std::to_string(e.nbytes) + " bytes at offset " +
                  std::to_string(e.offset) + "; expected " +
                  std::to_string(elementCount(e.shape) * sizeof(float)) +
                  " bytes at a multiple of 4");
    }
  }
  const std::string file_id = hex(model_id, kModelIdBytes);
  if (lower(model_id_hex) != file_id) {
    throw Error(where + ": weights are for another model: expected id " + model_id_hex +
                ", file has " + file_id + " -- re-run paleozoic compile");
  }
  if (data_offset % kDataAlignment != 0 || data_offset < r.pos()) {
    throw Error(where + ": data offset " + std::to_string(data_offset) +
                " is invalid; expected a multiple of 64 after the header (" +
                std::to_string(r.pos()) + " bytes)");
  }
  if (data_offset > file_bytes) {
    throw Error(where + " is truncated: the data section starts at byte " +
                std::to_string(data_offset) + " but the file has " + std::to_string(file_bytes) +
                " bytes -- re-run paleozoic compile");
  }
  data_offset_ = data_offset;
  const std::uint64_t data_bytes = file_bytes - data_offset;
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const std::string& name = entries_[i].first;
    const Entry& e = entries_[i].second;
    if (e.offset > data_bytes || data_bytes - e.offset < e.nbytes) {
      throw Error(where + " is truncated: tensor '" + name + "' needs data bytes " +
                  std::to_string(e.offset) + ".." + std::to_string(e.offset + e.nbytes) +
                  " but the data section has " + std::to_string(data_bytes) +
                  " bytes -- re-run paleozoic compile");
    }
  }
  if (residency_ != Residency::kWholeFile) return;
  data_.resize(static_cast<std::size_t>(data_bytes / sizeof(float)));
  if (!data_.empty() && !readAt(in, data_offset, data_.data(), data_.size() * sizeof(float))) {
    throw Error(where + " could not be read to its end -- re-run paleozoic compile");
  }
  for (const auto& [name, e] : entries_) {
    const float* data = nullptr;
    load(name, e, &data);  // checks the checksum
  }
}

std::shared_ptr<const std::vector<float>> WeightFile::load(const std::string& name,
                                                           const Entry& e,
                                                           const float** data) const {
  std::shared_ptr<std::vector<float>> owned;
  if (residency_ != Residency::kWholeFile) {
    owned = std::make_shared<std::vector<float>>(e.nbytes / sizeof(float));
    readTensor(path_, name, data_offset_ + e.offset, e.nbytes, e.crc, owned->data());
    *data = owned->data();
    return owned;
  }
  *data = data_.data() + e.offset / sizeof(float);
  checkCrc(path_, name, *data, e.nbytes, e.crc);
  return owned;
}

void WeightFile::close() {
  std::vector<float>().swap(data_);
  closed_ = true;
}

WeightView WeightFile::get(const std::string& name, const Shape& shape) const {
  if (closed_) {
    throw Error("weights file '" + path_ + "': tensor '" + name + "' asked for after close(); "
                "configure every layer before closing the file");
  }
  for (const auto& [entry_name, entry] : entries_) {
    if (entry_name != name) continue;
    if (entry.shape != shape) {
      throw Error("weights file '" + path_ + "': tensor '" + name + "' has shape " +
                  shapeToString(entry.shape) + ", expected " + shapeToString(shape) +
                  " -- the file does not match this session; re-run paleozoic compile");
    }
    if (residency_ == Residency::kAtCompile) {
      WeightView view{nullptr, entry.shape, name, path_};
      view.read = [path = path_, name, offset = data_offset_ + entry.offset,
                   nbytes = entry.nbytes, crc = entry.crc](float* into) {
        readTensor(path, name, offset, nbytes, crc, into);
      };
      return view;
    }
    const float* data = nullptr;
    std::shared_ptr<const std::vector<float>> storage = load(name, entry, &data);
    WeightView view{data, entry.shape, name, path_};
    view.storage = std::move(storage);
    return view;
  }
  throw Error("weights file '" + path_ + "' has no tensor '" + name + "' (it holds " +
              std::to_string(entries_.size()) +
              " tensors) -- the file does not match this session; re-run paleozoic compile");
}

LayerQuantization WeightFile::quantization(const std::string& layer) const {
  if (closed_) {
    throw Error("weights file '" + path_ + "': layer " + layer + "'s quantisation asked for "
                "after close(); configure every layer before closing the file");
  }
  const Entry* input = nullptr;
  const Entry* filter = nullptr;
  for (const auto& [entry_name, entry] : entries_) {
    if (entry_name == layer + ".quant.input") input = &entry;
    if (entry_name == layer + ".quant.filter") filter = &entry;
  }
  if (input == nullptr || filter == nullptr) {
    throw Error("weights file '" + path_ + "' has no int8 quantisation parameters for layer " +
                layer + " -- compile the model with --calibration CALIB.json (made by " +
                "`paleozoic calibrate MODEL --data ...`)");
  }
  if (input->shape != Shape{2} || filter->shape.size() != 2 || filter->shape[1] != 2) {
    throw Error("weights file '" + path_ + "': the quantisation parameters of layer " + layer +
                " have shapes " + shapeToString(input->shape) + " and " +
                shapeToString(filter->shape) + ", expected [2] and [channels, 2]");
  }
  // Positions are small integers, stored exactly as float32.
  auto param = [](const float* p) { return QuantParam{static_cast<int>(p[0]), p[1]}; };
  LayerQuantization out;
  const float* in = nullptr;
  const float* f = nullptr;
  const auto in_storage = load(layer + ".quant.input", *input, &in);
  const auto f_storage = load(layer + ".quant.filter", *filter, &f);
  out.input = param(in);
  for (int c = 0; c < filter->shape[0]; ++c) out.filter.push_back(param(f + 2 * c));
  return out;
}

std::size_t WeightFile::tensorCount() const { return entries_.size(); }

}  // namespace pz

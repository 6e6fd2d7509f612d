// The weights file an emitted session reads, and raw float32 input / output files.
#ifndef PALEOZOIC_WEIGHT_FILE_H_
#define PALEOZOIC_WEIGHT_FILE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "paleozoic/core.h"

namespace pz {

// Format (little-endian), written by paleozoic/codegen/weights.py:
//   char magic[8] = "PZWEIGHT"; u32 version = 1; u32 tensor_count;
//   char model_id[16] (raw bytes, first 16 of sha256 of the data section);
//   u64 data_offset (multiple of 64, start of the data section from file start);
//   per tensor: u16 name_len, name bytes, u8 dtype (1 = float32), u8 ndim, u32 dims[ndim],
//               u64 offset (from data_offset), u64 nbytes, u32 crc32 (zlib) of its bytes;
//   u32 crc32 (zlib) of every header byte before it; zero padding to data_offset; data.
class WeightFile {
 public:
  // How the data is held. kWholeFile: all of it, read and checked by the constructor, until
  // close() (get()'s pointers stay valid that long). kOnDemand: each tensor read and checked
  // when get() asks for it, into a buffer the returned view owns, so that a session whose
  // layers copy their weights holds each tensor once, not the file beside its copies.
  // kAtCompile: each tensor read and checked when the block of the layer holding it compiles
  // (get()'s view reads it then, from the file by its path, close() or not), so that a
  // session holds a block's plain weights only while it compiles.
  enum class Residency { kWholeFile, kOnDemand, kAtCompile };

  // Throws pz::Error naming the file when it is missing, truncated, of another version or
  // model (model_id_hex differs), or fails a checksum (kOnDemand, kAtCompile: a tensor's
  // checksum is checked when it is read).
  WeightFile(const std::string& path, const std::string& model_id_hex,
             Residency residency = Residency::kWholeFile);
  WeightFile(const WeightFile&) = delete;
  WeightFile& operator=(const WeightFile&) = delete;
  // The tensor's data with its name, shape and this file's path, so a layer configured with
  // it checks that it holds as many values as the layer needs; valid while the file lives
  // (kWholeFile) or while the view does (kOnDemand). Throws pz::Error when the tensor is
  // absent, its shape differs from `shape`, or it cannot be read back intact.
  WeightView get(const std::string& name, const Shape& shape) const;
  // The int8 parameters of `layer` ("<layer>.quant.input" [position, scale] and
  // "<layer>.quant.filter" [channels, 2]). Throws pz::Error saying how to get them when the
  // file has none (the session was compiled without --calibration).
  LayerQuantization quantization(const std::string& layer) const;
  std::size_t tensorCount() const;
  // Frees the file's data once every layer has taken its weights (after configuration, so
  // that the session does not hold them twice); get() and quantization() throw after it.
  void close();

 private:
  struct Entry {
    Shape shape;
    std::uint64_t offset;
    std::uint64_t nbytes;
    std::uint32_t crc;
  };
  // The entry's values: a view of data_ (kWholeFile) or read from the file now.
  std::shared_ptr<const std::vector<float>> load(const std::string& name, const Entry& e,
                                                 const float** data) const;
  std::string path_;
  Residency residency_;
  std::uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, Entry>> entries_;
  std::vector<float> data_;
  bool closed_ = false;
};

// Reads a raw little-endian float32 file holding exactly `count` values (else pz::Error).
std::vector<float> readFloatFile(const std::string& path, std::size_t count);
void writeFloatFile(const std::string& path, const std::vector<float>& values);

}  // namespace pz

#endif  // PALEOZOIC_WEIGHT_FILE_H_

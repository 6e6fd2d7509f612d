#include "workspace.h"

#include "aligned_buffer.h"

namespace pz_sdk {

float* threadWorkspace(std::size_t floats, int level) {
  thread_local AlignedBuffer buffers[2];
  AlignedBuffer& buffer = buffers[level];
  if (buffer.size() < floats) buffer.resize(floats);
  return buffer.data();
}

}  // namespace pz_sdk

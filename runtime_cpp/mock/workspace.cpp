#include "workspace.h"

#include "aligned_buffer.h"

namespace pz_mock {

float* threadWorkspace(std::size_t floats) {
  thread_local AlignedBuffer buffer;
  if (buffer.size() < floats) buffer.resize(floats);
  return buffer.data();
}

}  // namespace pz_mock

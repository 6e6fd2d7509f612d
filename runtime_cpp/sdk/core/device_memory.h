// "Device" memory is host memory, but every allocation is tracked so the mock can reject
// the pointer and size errors a real device would fault on.
#ifndef PZ_SDK_DEVICE_MEMORY_H_
#define PZ_SDK_DEVICE_MEMORY_H_

#include <cstddef>

namespace pz_sdk {

void* deviceAlloc(std::size_t bytes);  // nullptr when the host is out of memory
bool deviceFree(void* ptr);            // false when ptr is not the start of an allocation
bool isDevicePointer(const void* ptr);  // inside any live allocation
// True when [ptr, ptr + bytes) lies inside one live allocation (interior pointers allowed,
// as device address arithmetic is on real hardware).
bool deviceRangeValid(const void* ptr, std::size_t bytes);

}  // namespace pz_sdk

#endif  // PZ_SDK_DEVICE_MEMORY_H_

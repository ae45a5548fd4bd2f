#include "worker/heap_retention.h"

#include <climits>
#include <cstdlib>
#include <initializer_list>

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace traind {

bool RetainFreedHeapMemory() {
#ifdef __GLIBC__
  for (const char* name :
       {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "GLIBC_TUNABLES"}) {
    if (std::getenv(name) != nullptr) return false;  // the user tuned it: theirs wins
  }
  // Older glibc refuses thresholds above 32 MiB; then take the largest it allows.
  if (mallopt(M_MMAP_THRESHOLD, 1 << 30) == 0) mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
  return true;
#else
  return false;
#endif
}

}  // namespace traind

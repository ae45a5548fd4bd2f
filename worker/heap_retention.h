// Keeps memory that a training step frees inside the worker process instead of handing it back
// to the kernel, so the next step does not page-fault it in again.
#ifndef TRAIND_WORKER_HEAP_RETENTION_H_
#define TRAIND_WORKER_HEAP_RETENTION_H_

namespace traind {

// With glibc, blocks above the (dynamic, 128 KiB..32 MiB) mmap threshold are unmapped when freed
// and the heap's top is trimmed, so every step maps and zero-fills its large activations afresh:
// ResNet-18 at 224 px on one CPU core spent a quarter of its time in the kernel and ran 1.6x slower
// than the same loop in Python. A step allocates the same sizes every time, so the worker (one
// job, then it exits) serves allocations up to 1 GiB from its heap and never trims it; its RSS
// stays at the job's peak. Does nothing when the user set glibc's malloc variables (MALLOC_*_ or
// GLIBC_TUNABLES) or off glibc. Returns whether it changed anything.
bool RetainFreedHeapMemory();

}  // namespace traind

#endif  // TRAIND_WORKER_HEAP_RETENTION_H_

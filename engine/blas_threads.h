// The BLAS library's own threads. Debian's LibTorch calls the system BLAS for matrix products
// (linear layers, some convolutions), and OpenBLAS's pthreads build keeps a thread pool of its
// own sized to every CPU, which LibTorch's set_num_threads does not reach: a job on one intra-op
// thread still split its products over two cores, whose waiting threads spin in sched_yield.
// On the 2-vCPU machine two threads each training LeNet5 took 12.1 ms a step each against 2.96 ms
// alone, and 3.1 / 2.7 ms with OpenBLAS on one thread (docs/benchmarks-history.md, session 17):
// batch shards (engine/shard_threads.h) need the BLAS on one thread each. Thread-compatible: call
// it from the job's thread before its first operation.
#ifndef TRAIND_ENGINE_BLAS_THREADS_H_
#define TRAIND_ENGINE_BLAS_THREADS_H_

#include <string>

namespace traind {

struct BlasThreads {
  bool settable = false;  // the loaded BLAS has a thread count we can set (OpenBLAS)
  int before = 0;         // its threads before, when settable
  int after = 0;          // and after
  std::string library;    // e.g. "OpenBLAS 0.3.21 (pthreads)"; empty when not settable
};

// Gives the BLAS library that this process loaded (found by its symbols, whichever
// libblas.so.3 the system points at) `threads` threads (ChooseBlasThreads), so its
// products share the cores the job was given instead of taking them all. Does nothing when the
// BLAS has no such switch (the reference BLAS is single-threaded; MKL follows LibTorch's own).
BlasThreads SetBlasThreads(int threads);

// For the job's log: "OpenBLAS 0.3.21 (pthreads): 1 thread (was 2)"; empty when not settable.
std::string DescribeBlasThreads(const BlasThreads& blas);

}  // namespace traind

#endif  // TRAIND_ENGINE_BLAS_THREADS_H_

// How many intra-op threads a job takes when its spec does not say (`--threads`): from what the
// machine really gives this worker (the physical cores in its CPU affinity, within a cgroup CPU
// quota) and how many jobs or ranks share them. One core is left to the daemon, the worker's other
// threads and local clients: OpenMP's threads wait for each other at the end of every operator,
// so one preempted thread stalls them all. A LeNet5 epoch (medians of 3,
// docs/benchmarks-history.md, session 14): on the 2-vCPU VM 4.79 s with one thread, 5.80 s with
// two; on a 16-core host 1.10 s with 15, 1.72 s with 16.
#ifndef TRAIND_COMMON_CPU_THREADS_H_
#define TRAIND_COMMON_CPU_THREADS_H_

#include <string>

namespace traind {

struct CpuFacts {
  int logical_cpus = 1;    // in this process's affinity mask
  int physical_cores = 1;  // of those, SMT siblings counted once
  double quota_cpus = 0;   // the cgroup's CPU quota (cpu.max), in CPUs; 0: none
  // OMP_NUM_THREADS in traind's (so the worker's) environment, 0: unset or not a number. Set, it
  // caps the choice: whoever set it knows what else shares the cores (torchrun sets it too).
  int omp_num_threads = 0;
  // TRAIND_BATCH_SHARDS in traind's environment, 0: unset or not a number (1 turns shards off).
  int batch_shards = 0;
  // TRAIND_BLAS_THREADS in traind's environment, 0: unset or not a number.
  int blas_threads = 0;
};

// Reads the affinity mask, /sys/devices/system/cpu/cpuN/topology, the cgroup's cpu.max and
// OMP_NUM_THREADS. What it cannot read it takes from what it can (no topology: each logical CPU
// is a core).
CpuFacts ReadCpuFacts();

// The cores this process may use: physical cores, within a cgroup quota (rounded up). `what`,
// when given, says which ("8 physical cores (16 CPUs), a cgroup quota of 4 CPUs").
int UsableCores(const CpuFacts& facts, std::string* what = nullptr);

struct CpuThreads {
  int threads = 1;
  std::string explanation;  // for the job's log: "1 intra-op thread: 2 physical cores, ..."
};

// `sharers`: the jobs the CPU lane runs at once (traind --slots cpu=N, TRAIND_CPU_SLOTS in the
// worker's environment), or a data-parallel job's ranks on this machine.
CpuThreads ChooseCpuThreads(const CpuFacts& facts, int sharers, const std::string& sharers_are);

// A job that runs alone and meets nothing while it runs (an exclusive matmul benchmark: one long
// product after another, no events between them): every core of the machine, none left for the
// daemon, as torch.mm would take them; OMP_NUM_THREADS still caps it. Measuring a CPU on half of
// a 2-core machine (0.18 against torch.mm's 0.33 TFLOP/s) would inflate every GPU speedup.
CpuThreads WholeMachineThreads(const CpuFacts& facts, const std::string& why);

// The BLAS's own threads (engine/blas_threads.h): the job's intra-op threads, one per shard when
// it trains in shards, unless TRAIND_BLAS_THREADS says otherwise (for measuring, and for the
// machine where the default is wrong).
int ChooseBlasThreads(const CpuFacts& facts, int job_threads);

// The most batch shards a job takes by default (ChooseBatchShards).
inline constexpr int kMaxBatchShards = 4;

struct BatchShards {
  int shards = 1;
  std::string explanation;  // for the job's log
};

// How many shards of each batch a CPU job trains at once, one thread each (engine/shard_threads.h),
// in place of intra-op threads: every core of the job's share when that share is 2 to
// kMaxBatchShards cores, the one ChooseCpuThreads leaves to the daemon included (shards meet once
// a step, not after every operator, so the daemon's short bursts of work delay a step, not every
// operator); 1 (no shards) otherwise. A cgroup quota counts in whole CPUs here. Beyond a few
// cores the intra-op threads stay: on the 16-core host shards gained LeNet5 up to ~10% but cost
// the MLP, whose products intra-op threads split well, up to 2.5x (docs/benchmarks-history.md,
// session 17). OMP_NUM_THREADS caps it, TRAIND_BATCH_SHARDS sets it.
BatchShards ChooseBatchShards(const CpuFacts& facts, int sharers, const std::string& sharers_are);

}  // namespace traind

#endif  // TRAIND_COMMON_CPU_THREADS_H_

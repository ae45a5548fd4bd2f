#include "common/cpu_threads.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace traind {

namespace {

// The first line of a small file; "" when it cannot be read.
std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// A positive whole number from the environment; 0 when unset or anything else.
int PositiveFromEnvironment(const char* name) {
  const char* text = std::getenv(name);
  int value = 0;
  if (text == nullptr || !absl::SimpleAtoi(text, &value) || value < 0) return 0;
  return value;
}

// cgroup v2: the CPU quota of this process's own cgroup ("max" or "QUOTA PERIOD"), 0 when none.
double CgroupQuotaCpus() {
  std::string own = FirstLine("/proc/self/cgroup");  // "0::/path" under cgroup v2
  const size_t at = own.find("::");
  std::string path = "/sys/fs/cgroup" + (at == std::string::npos ? "" : own.substr(at + 2));
  std::string line = FirstLine(path + "/cpu.max");
  if (line.empty()) line = FirstLine("/sys/fs/cgroup/cpu.max");
  std::istringstream fields(line);
  std::string quota;
  double period = 0;
  if (!(fields >> quota >> period) || quota == "max" || period <= 0) return 0;
  try {
    return std::stod(quota) / period;
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

int UsableCores(const CpuFacts& facts, std::string* what) {
  int usable = std::max(1, facts.physical_cores);
  std::string said = absl::StrCat(usable, " physical core", usable == 1 ? "" : "s");
  if (facts.logical_cpus > usable) absl::StrAppend(&said, " (", facts.logical_cpus, " CPUs)");
  if (facts.quota_cpus > 0 && std::ceil(facts.quota_cpus) < usable) {
    usable = std::max(1, static_cast<int>(std::ceil(facts.quota_cpus)));
    absl::StrAppend(&said, absl::StrFormat(", a cgroup quota of %.3g CPUs", facts.quota_cpus));
  }
  if (what != nullptr) *what = std::move(said);
  return usable;
}

CpuFacts ReadCpuFacts() {
  CpuFacts facts;
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof(mask), &mask) != 0) return facts;
  std::set<std::pair<std::string, std::string>> cores;  // (package, core)
  int logical = 0;
  bool topology = true;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &mask)) continue;
    ++logical;
    const std::string dir = absl::StrCat("/sys/devices/system/cpu/cpu", cpu, "/topology/");
    const std::string package = FirstLine(dir + "physical_package_id");
    const std::string core = FirstLine(dir + "core_id");
    if (core.empty()) topology = false;
    cores.emplace(package, core);
  }
  facts.logical_cpus = std::max(1, logical);
  facts.physical_cores = topology ? std::max<int>(1, cores.size()) : facts.logical_cpus;
  facts.quota_cpus = CgroupQuotaCpus();
  facts.omp_num_threads = PositiveFromEnvironment("OMP_NUM_THREADS");
  facts.batch_shards = PositiveFromEnvironment("TRAIND_BATCH_SHARDS");
  facts.blas_threads = PositiveFromEnvironment("TRAIND_BLAS_THREADS");
  return facts;
}

BatchShards ChooseBatchShards(const CpuFacts& facts, int sharers, const std::string& sharers_are) {
  sharers = std::max(1, sharers);
  std::string what;
  int usable = UsableCores(facts, &what);
  // Whole CPUs of a quota only: a shard on a fraction of a CPU would stall every step when the
  // quota throttles it (threads are rounded up, since one operator's threads wait less).
  if (facts.quota_cpus > 0)
    usable = std::min(usable, static_cast<int>(std::floor(facts.quota_cpus)));
  const int share = usable / sharers;
  BatchShards chosen;
  if (facts.batch_shards > 0) {
    chosen.shards = facts.batch_shards;
    chosen.explanation = absl::StrCat("TRAIND_BATCH_SHARDS=", facts.batch_shards);
  } else if (share >= 2 && share <= kMaxBatchShards) {
    chosen.shards = share;
    chosen.explanation = absl::StrCat(what, ", ", sharers, " ", sharers_are);
    if (facts.omp_num_threads > 0 && facts.omp_num_threads < chosen.shards) {
      chosen.shards = facts.omp_num_threads;
      absl::StrAppend(&chosen.explanation, "; at most OMP_NUM_THREADS=", facts.omp_num_threads);
    }
  }
  return chosen;
}

int ChooseBlasThreads(const CpuFacts& facts, int job_threads) {
  return facts.blas_threads > 0 ? facts.blas_threads : std::max(1, job_threads);
}

CpuThreads ChooseCpuThreads(const CpuFacts& facts, int sharers, const std::string& sharers_are) {
  sharers = std::max(1, sharers);
  std::string what;
  const int usable = UsableCores(facts, &what);
  const int for_jobs = usable > 1 ? usable - 1 : 1;
  CpuThreads chosen;
  chosen.threads = std::max(1, for_jobs / sharers);
  const bool capped = facts.omp_num_threads > 0 && facts.omp_num_threads < chosen.threads;
  if (capped) chosen.threads = facts.omp_num_threads;
  absl::StrAppend(&chosen.explanation, chosen.threads, " intra-op thread",
                  chosen.threads == 1 ? "" : "s", ": ", what);
  if (usable > 1) absl::StrAppend(&chosen.explanation, ", one left for the daemon and clients");
  absl::StrAppend(&chosen.explanation, "; ", sharers, " ", sharers_are);
  if (capped) {
    absl::StrAppend(&chosen.explanation, "; at most OMP_NUM_THREADS=", facts.omp_num_threads);
  }
  absl::StrAppend(&chosen.explanation, " (--threads N chooses)");
  return chosen;
}

CpuThreads WholeMachineThreads(const CpuFacts& facts, const std::string& why) {
  std::string what;
  CpuThreads chosen;
  chosen.threads = UsableCores(facts, &what);
  const bool capped = facts.omp_num_threads > 0 && facts.omp_num_threads < chosen.threads;
  if (capped) chosen.threads = facts.omp_num_threads;
  chosen.explanation =
      absl::StrCat(chosen.threads, " intra-op thread", chosen.threads == 1 ? "" : "s", ": ", what,
                   ", the whole machine (", why, ")");
  if (capped) {
    absl::StrAppend(&chosen.explanation, "; at most OMP_NUM_THREADS=", facts.omp_num_threads);
  }
  absl::StrAppend(&chosen.explanation, " (--threads N chooses)");
  return chosen;
}

}  // namespace traind

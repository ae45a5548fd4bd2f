// SearchPacker: the search driver's part in packing a search's trials onto one GPU. While nothing
// is measured a search's trials take a GPU each (its slots); once one of them ended its run so
// (AloneReading: how busy it kept the GPU over its run, how much of its memory was in use),
// DecidePacking (server/trial_packing.h) sets how many trials share a GPU from now on, the
// scheduler places them so (Scheduler::SetPackWidth) and the driver keeps that many more in
// flight. The driver stores the decision with the search (Store::SaveSearchPacking) and hands it
// back after a restart or an extension: it is never measured again, since a packed trial's reading
// counts its neighbours' work too.
// Thread-safe.
#ifndef TRAIND_SERVER_SEARCH_PACKER_H_
#define TRAIND_SERVER_SEARCH_PACKER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "server/search_plan.h"
#include "server/trial_packing.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

class SearchPacker {
 public:
  struct Options {
    int host_cores = 1;
    // Scheduler::SetPackWidth. Unset: the width is only reported.
    std::function<void(int64_t sweep_id, int width)> set_width;
  };
  explicit SearchPacker(Options options) : options_(std::move(options)) {}

  // One pass over search `sweep_id` (spec `spec`, plan `plan`): `live` are its trials' jobs as
  // they are now; `stored` the decision the store kept for it, if any, applied as it is. Returns
  // how many of its trials share a GPU now (1 off CUDA, or until measured).
  int Update(int64_t sweep_id, const trainer::v1::SweepSpec& spec, const SearchPlan& plan,
             const std::vector<trainer::v1::Job>& live, const std::optional<Packing>& stored);
  // The decision for the search, once there is one (for the driver to store).
  std::optional<Packing> Decided(int64_t sweep_id) const;
  // The search is over (or cancelled): its trials no longer share a GPU.
  void Forget(int64_t sweep_id);

 private:
  // The largest batch size a trial of `spec` may draw (its base's when batch_size is not searched).
  static int64_t LargestBatch(const trainer::v1::SweepSpec& spec, const SearchPlan& plan);

  const Options options_;
  mutable absl::Mutex mu_;
  std::map<int64_t, Packing> decided_ ABSL_GUARDED_BY(mu_);  // by search
};

}  // namespace traind

#endif  // TRAIND_SERVER_SEARCH_PACKER_H_

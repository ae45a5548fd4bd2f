// A search's part in packing its trials onto one GPU or the CPU lane. While nothing is measured a
// search's trials take a GPU (or a CPU slot) each; once one of them ended its run alone
// (AloneReading: how busy it kept its device over its run and while training, how much memory
// was in use), DecidePacking (server/trial_packing.h) sets how many trials share it from then on.
// The search driver stores that decision with the search (Store::SaveSearchPacking) and applies the
// stored one on every pass after (Scheduler::SetPackWidth, and that many more trials in flight): it
// is never measured again, since a packed trial's reading counts its neighbours' work too. Pure.
#ifndef TRAIND_SERVER_SEARCH_PACKER_H_
#define TRAIND_SERVER_SEARCH_PACKER_H_

#include <functional>
#include <optional>
#include <vector>

#include "server/search_plan.h"
#include "server/trial_packing.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

// Where a search's trials would pack: the host's usable cores, the lanes its trials spread over
// (DevicePlan::Lanes), and whether a GPU's packed trials run side by side (MPS; asked only once a
// GPU trial's reading is there to decide from, since asking starts traind's daemon). Unset: no.
struct PackingHost {
  int host_cores = 1;
  int lanes = 1;
  std::function<bool()> side_by_side;
};

// The decision for a search (spec `spec`, plan `plan`) whose trials' jobs are `live` now, on
// `host`: nullopt unless its trials run as one process on one GPU or the CPU lane, and until a
// trial's run ended alone (unless max_pack 1 said so already).
std::optional<Packing> DecideSearchPacking(const trainer::v1::SweepSpec& spec,
                                           const SearchPlan& plan,
                                           const std::vector<trainer::v1::Job>& live,
                                           const PackingHost& host);

}  // namespace traind

#endif  // TRAIND_SERVER_SEARCH_PACKER_H_

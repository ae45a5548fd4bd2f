// SearchDriver: runs searches (SweepSpec.search). For each search not done it keeps up to
// `parallel` trials queued or running: it proposes the next trial (random, or TPE from the results
// so far) and queues it as a member of the search's sweep, to pause at its first rung; when a
// trial pauses or ends it records the trial's metric at that rung (search/asha.h), promotes the
// best of a rung (the paused job is queued again, to resume from its checkpoint to the next rung)
// or starts a new trial; once nothing can move, the trials still paused end SUCCEEDED and the
// search is done. It never waits for a straggler: a decision needs only what has reported.
// Every change of the searcher's state is stored with the trial it concerns in one transaction
// (Store::AddSearchTrial, MoveTrial), and a trial's result is read from its job, so a traind
// killed at any point continues with the same trials and no finished epoch trained again.
// Thread-safe: one thread of its own does the work; Wake may be called from any thread.
#ifndef TRAIND_SERVER_SEARCH_DRIVER_H_
#define TRAIND_SERVER_SEARCH_DRIVER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "search/asha.h"
#include "server/search_budget.h"
#include "server/search_packer.h"
#include "server/search_plan.h"
#include "server/store.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

// A search's trials as they are now, read once per pass.
struct SearchTrials {
  std::vector<ParamValues> params;  // trial k's draw
  // Trial k's job as it is now where the search may act on it (the trial is running or paused);
  // for the others only its id.
  std::vector<trainer::v1::Job> jobs;
};

class SearchDriver {
 public:
  struct Options {
    // How many jobs like `spec` the machine runs at once (its device's lane): a search's default
    // parallel. Unset: 1.
    std::function<int(const trainer::v1::JobSpec& spec)> lanes;
    // Called after trials were queued (Scheduler::Wake).
    std::function<void()> on_queued;
    // How many trials of a search share one GPU or the CPU lane (Scheduler::SetPackWidth;
    // server/search_packer.h), and where they run (built-in jobs in traind-worker, which waiting
    // workers serve, on the CPU or a GPU; or programs). Unset: trials are not packed. host_cores
    // is one of the bounds.
    std::function<void(int64_t sweep_id, int width, PackedTrials trials)> set_pack_width;
    int host_cores = 1;
    // Whether a GPU's packed built-in trials run side by side through traind's MPS daemon (which
    // asking starts: MpsControl::ClientEnvironment). Unset: they take turns.
    std::function<bool()> gpu_side_by_side;
  };
  SearchDriver(Store* store, Options options);
  ~SearchDriver();  // Stop

  void Start();
  // Something may have changed (a trial ended or paused, a search was created): look again.
  void Wake();
  void Stop();

  // One pass over one search (the thread calls it; tests may too, with the thread not started).
  absl::Status Advance(int64_t sweep_id);

  // How the search's trials are packed now, where that differs from the stored decision (a width
  // decided side by side while traind runs no MPS): the report's words. nullopt: as stored.
  std::optional<std::string> PackingNow(int64_t sweep_id) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Loop();
  // How many of the search's trials share a GPU (or the CPU) now, as stored, or as decided now from
  // its trials (server/search_packer.h) on `lanes` and stored; the scheduler told.
  int UpdatePacking(const Store::SearchRecord& record, const SearchPlan& plan,
                    const std::vector<trainer::v1::Job>& jobs, int lanes) ABSL_LOCKS_EXCLUDED(mu_);
  // The search is over: its trials no longer share a GPU.
  void Unpack(int64_t sweep_id) ABSL_LOCKS_EXCLUDED(mu_);
  // ASHA's promotion of a paused trial (`state` has it running again): its job queued to resume
  // from its checkpoint. A job cancelled meanwhile fails the trial instead.
  absl::Status Promote(const Store::SearchRecord& record, const SearchPlan& plan,
                       const SearchTrials& trials, const AshaAction& action, AshaState* state);
  // A new trial (`state` has it): drawn, then queued as a member of the search's sweep.
  absl::Status StartTrial(const Store::SearchRecord& record, const SearchPlan& plan,
                          const AshaAction& action, SearchTrials* trials, AshaState* state);
  // Nothing can move: the paused trials end (SUCCEEDED, not promoted) and the search is done.
  absl::Status Finish(const Store::SearchRecord& record, const SearchTrials& trials,
                      const AshaState& state);

  Store* const store_;
  const Options options_;
  SearchBudget budget_;  // the driver's thread only
  std::thread thread_;
  absl::Mutex mu_;
  bool wake_ ABSL_GUARDED_BY(mu_) = true;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // PackingNow's, by sweep (UpdatePacking's last pass).
  std::map<int64_t, std::string> packing_now_ ABSL_GUARDED_BY(mu_);
};

}  // namespace traind

#endif  // TRAIND_SERVER_SEARCH_DRIVER_H_

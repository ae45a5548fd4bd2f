// What a search's report says of it (SweepReport.search): each trial's draw, how far it got
// (rung, epochs, status) and its metric there, the best trial, and the epochs spent against
// training every trial started to the end; at most 2000 trials, the furthest and best. Pure: from
// the stored search and its trials' jobs.
#ifndef TRAIND_SERVER_SEARCH_REPORT_H_
#define TRAIND_SERVER_SEARCH_REPORT_H_

#include <map>
#include <vector>

#include "absl/status/statusor.h"
#include "server/store.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

// `jobs`: the search's members as they are now (their training time), by id; a trial whose job is
// missing has none.
absl::StatusOr<trainer::v1::SearchReport> BuildSearchReport(
    const Store::SearchRecord& record, const std::map<int64_t, trainer::v1::Job>& jobs);

}  // namespace traind

#endif  // TRAIND_SERVER_SEARCH_REPORT_H_

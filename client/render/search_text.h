// A search's part of `trainctl report` (SweepReport.search): the best trial and what it drew,
// each trial's draw, how far it got and its metric, and the compute spent against training every
// trial to the end. Pure; returns the whole text, ending in a newline ("" for a plain sweep).
#ifndef TRAIND_CLIENT_RENDER_SEARCH_TEXT_H_
#define TRAIND_CLIENT_RENDER_SEARCH_TEXT_H_

#include <string>

#include "trainer/v1/trainer.pb.h"

namespace traind {

std::string SearchText(const trainer::v1::SearchReport& search);

}  // namespace traind

#endif  // TRAIND_CLIENT_RENDER_SEARCH_TEXT_H_

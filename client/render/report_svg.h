// A sweep report as one self-contained SVG image (`trainctl report --svg`), for sharing a CPU
// against GPU comparison where a table will not do: a bar chart of each row's speedup against the
// baseline device above the rows' training-loss curves. Pure function.
#ifndef TRAIND_CLIENT_RENDER_REPORT_SVG_H_
#define TRAIND_CLIENT_RENDER_REPORT_SVG_H_

#include <string>

#include "trainer/v1/trainer.pb.h"

namespace traind {

// A complete SVG document, about 900 px wide and as tall as the rows need, ending in "</svg>\n".
// It references nothing outside itself, so it can be attached or embedded as it is.
std::string ReportSvg(const trainer::v1::SweepReport& report);

}  // namespace traind

#endif  // TRAIND_CLIENT_RENDER_REPORT_SVG_H_

// `upguard machines detect --html FILE`: the detections as one self-contained HTML page (no
// script, no external file): per detection and metric, a chart of the machine's series against
// its peers' median and 10-90% band over time, the detection's span shaded and its alert marked,
// so a person sees at a glance how the machine parted from the others and since when.
#pragma once

#include <string>

#include "machines/detector.h"
#include "machines/grid.h"
#include "machines/report.h"
#include "upguard/status.h"

namespace upguard::machines {

std::string RenderDetectionsHtml(const Grid& grid, const DetectResult& result,
                                 const ReportContext& context);

// Writes RenderDetectionsHtml to `path` (replacing it); errors name the path.
Status WriteDetectionsHtml(const Grid& grid, const DetectResult& result,
                           const ReportContext& context, const std::string& path);

}  // namespace upguard::machines

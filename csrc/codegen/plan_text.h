// The launch plan's text: the "//@" comment lines at the end of the generated CUDA source
// (ir/launch_plan.h shows an example). Printing and parsing live together so that they cannot
// drift apart: parse_plan(print_plan(p)) gives p back.
#pragma once

#include <string>

#include "ir/launch_plan.h"

namespace parir {

std::string print_plan(const LaunchPlan& plan);

// Finds the "//@" lines of a CUDA source and parses them, resolving each launch's arguments
// (resolve_launch_args). Throws parir::Error naming the line of the source that is malformed.
LaunchPlan parse_plan(const std::string& cuda_source);

}  // namespace parir

// train/train_plot.h — draws a training log (train_log.csv) as an SVG: the loss and the
// held-out loss over steps on top, the best heads' induction / previous-token /
// first-token scores below — the phase change where induction heads form.
#pragma once

#include <string>

#include "util/result.h"

namespace headlab::train {

// Errors: corrupt when the CSV lacks the step and loss columns or has no row; `what`
// names the file in messages.
Result<std::string> train_log_svg(const std::string& csv_text, const std::string& what);

}  // namespace headlab::train

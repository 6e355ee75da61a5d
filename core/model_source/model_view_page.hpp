// The Model tab as one offline page (export/html_view.hpp): every layer's every head as a
// thumbnail of its attention — the very downsampled weights the tab draws — in rows of layers, each
// with its role in the tab's words and its scores, a click from the large view with hover values.
// The command line (`export --model DIR --view model --out F.html`) and the tab's Export… both
// build the page here and write it with exportHtml.
#pragma once

#include <string>

#include "export/html_view.hpp"
#include "model/model_view.hpp"

namespace mhascope {

// The page of `v`, computed on model folder `folder`: titled "Every head of FOLDER · T = n tokens",
// its sizes and the probe (when it was the repeated random tokens) under the title.
HtmlExport modelViewPage(const model::ModelView& v, const std::string& folder);

}  // namespace mhascope

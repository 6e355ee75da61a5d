// The exported page's script and style, inlined by renderHtml (html_view.cpp): the script draws the
// heatmaps, the grid, the head view and a timeline's curves from the page's data block, answers
// hover and clicks, and follows the address's #head=H&cell=R,C&query=Q&frame=F.
#pragma once

namespace mhascope::export_detail {

extern const char* const kHtmlViewScript;
extern const char* const kHtmlViewStyle;

}  // namespace mhascope::export_detail

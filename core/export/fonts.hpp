// Text in exported pictures: UTF-8 labels shaped into runs per font face (per-code-point
// fallback, so a CJK token or an emoji is drawn, not a box), measured and drawn through cairo.
#pragma once

#include <cairo.h>

#include <array>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "export/cairo_handles.hpp"
#include "util/utf8.hpp"

namespace mhascope::export_detail {

// Tried in order for every code point; the first face that has a glyph draws it. Cairo's toy
// text API draws with one face and no fallback, so without this a CJK token would come out as
// empty boxes. Families that are not installed resolve to some other face, which the coverage
// check then simply finds lacking or redundant.
inline constexpr std::array<const char*, 5> kFontFamilies = {"DejaVu Sans", "Droid Sans Fallback", "Noto Sans CJK JP",
                                                      "Noto Color Emoji", "Symbola"};

struct TextRun {
  int face = 0;  // index into kFontFamilies
  std::string text;
};
using Runs = std::vector<TextRun>;

// The code point at s[i], i moved past it. Input is valid UTF-8 (replaceInvalidUtf8 ran first); an
// ill-formed part would read as the U+FFFD replaceInvalidUtf8 makes of it.
char32_t decodeAt(std::string_view s, std::size_t& i);
// Invisible joiners and variation selectors: dropped when no font has them, rather than
// spelled out as "U+FE0F" in the middle of a label.
bool isInvisibleFormatChar(char32_t cp);
// Long tokens would push the heatmap off the page: keep the first code points and mark the cut.
std::string truncateLabel(const std::string& utf8, std::size_t maxCodePoints);

class Fonts {
 public:
  Fonts() {
    cairo_font_options_t* fo = cairo_font_options_create();
    cairo_matrix_t size, identity;
    cairo_matrix_init_scale(&size, 12, 12);
    cairo_matrix_init_identity(&identity);
    for (const char* family : kFontFamilies) {
      regular_.emplace_back(cairo_toy_font_face_create(family, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL));
      probes_.emplace_back(cairo_scaled_font_create(regular_.back().get(), &size, &identity, fo));
    }
    bold_.reset(cairo_toy_font_face_create(kFontFamilies[0], CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD));
    cairo_font_options_destroy(fo);
  }

  // A label ready to draw: runs of text per face; code points no face has become "U+1F600".
  Runs shape(std::string_view utf8) {
    Runs runs;
    bool afterName = false;  // a "U+…" name is set off from its neighbours by spaces
    auto append = [&runs, &afterName](int face, std::string_view piece, bool isName) {
      const bool empty = runs.empty();
      if (!empty && (isName || afterName)) append0(runs, " ");
      if (runs.empty() || runs.back().face != face) runs.push_back(TextRun{face, {}});
      runs.back().text.append(piece);
      afterName = isName;
    };
    std::size_t i = 0;
    while (i < utf8.size()) {
      const std::size_t start = i;
      const char32_t cp = decodeAt(utf8, i);
      const std::string_view bytes = utf8.substr(start, i - start);
      if (cp < 0x20 || (cp >= 0x7F && cp < 0xA0)) {  // control characters have no picture
        append(0, codePointName(cp), true);
        continue;
      }
      const int face = faceFor(cp);
      if (face >= 0) {
        append(face, bytes, false);
      } else if (!isInvisibleFormatChar(cp)) {
        append(0, codePointName(cp), true);
      }
    }
    return runs;
  }

  static void append0(Runs& runs, std::string_view text) {
    if (runs.empty() || runs.back().face != 0) runs.push_back(TextRun{0, {}});
    runs.back().text.append(text);
  }

  double width(cairo_t* cr, const Runs& runs, double size, bool bold) const {
    double w = 0;
    for (const TextRun& run : runs) {
      select(cr, run.face, size, bold);
      cairo_text_extents_t ext;
      cairo_text_extents(cr, run.text.c_str(), &ext);
      w += ext.x_advance;
    }
    return w;
  }

  // Draws from the current point along the current transformation.
  void draw(cairo_t* cr, const Runs& runs, double size, bool bold) const {
    for (const TextRun& run : runs) {
      select(cr, run.face, size, bold);
      cairo_show_text(cr, run.text.c_str());
    }
  }

 private:
  void select(cairo_t* cr, int face, double size, bool bold) const {
    cairo_set_font_face(cr, bold && face == 0 ? bold_.get() : regular_[static_cast<std::size_t>(face)].get());
    cairo_set_font_size(cr, size);
  }

  int faceFor(char32_t cp) {
    if (auto it = coverage_.find(cp); it != coverage_.end()) return it->second;
    std::string utf8;
    appendUtf8(utf8, cp);
    int found = -1;
    for (std::size_t f = 0; f < probes_.size() && found < 0; ++f) {
      cairo_scaled_font_t* sf = probes_[f].get();
      if (cairo_scaled_font_status(sf) != CAIRO_STATUS_SUCCESS) continue;
      cairo_glyph_t* glyphs = nullptr;
      int count = 0;
      const cairo_status_t st = cairo_scaled_font_text_to_glyphs(sf, 0, 0, utf8.c_str(), static_cast<int>(utf8.size()),
                                                                 &glyphs, &count, nullptr, nullptr, nullptr);
      // Glyph index 0 is the font's ".notdef" box: the face does not have this character.
      if (st == CAIRO_STATUS_SUCCESS && count == 1 && glyphs[0].index != 0) found = static_cast<int>(f);
      cairo_glyph_free(glyphs);
    }
    coverage_.emplace(cp, found);
    return found;
  }

  std::vector<FacePtr> regular_;
  std::vector<ScaledFontPtr> probes_;  // one 12 px instance per face, only to ask for glyphs
  FacePtr bold_;
  std::unordered_map<char32_t, int> coverage_;  // code point → face, -1 = none has it
};

}  // namespace mhascope::export_detail

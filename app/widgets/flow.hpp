// Toolbar flow: put the next widget on the same line when it fits, else start a new line, so
// toolbars wrap instead of being clipped in narrow windows.
#pragma once

namespace mhascope::app {

// Call after a widget, before the next one of about `nextWidth` pixels.
void sameLineOrWrap(float nextWidth, float spacing = -1.0f);

}  // namespace mhascope::app

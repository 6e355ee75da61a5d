// LeakSanitizer hook for the test binaries that draw text through cairo (the exports; the app's
// in-process tests export pictures too): the sanitizer build runs them with detect_leaks=1.
// Fontconfig, which cairo's text API loads, leaks a few hundred bytes once while parsing its XML
// configuration and keeps process-wide pattern caches that are never freed; neither grows with
// the number of pictures rendered (checked: 1 and 10 renders leak the same bytes). Only
// allocations made inside libfontconfig are suppressed, so a cairo object we forget to destroy
// is still reported.
extern "C" const char* __lsan_default_suppressions() { return "leak:libfontconfig.so\n"; }

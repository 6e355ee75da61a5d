// LeakSanitizer hook for the executables that draw text through cairo (the window and the command
// line export pictures; so do the core and in-process app tests): the sanitizer build runs them
// with detect_leaks=1. Compiled into each of those executables (MHASCOPE_LSAN_HOOK), never into a
// library, where nothing would pull it in.
// Fontconfig, which cairo's text API loads, leaks a few hundred bytes once while parsing its XML
// configuration and keeps process-wide pattern caches that are never freed; neither grows with
// the number of pictures rendered (checked: 1 and 10 renders leak the same bytes). Only
// allocations made inside libfontconfig are suppressed, so a cairo object we forget to destroy
// is still reported.
extern "C" const char* __lsan_default_suppressions() { return "leak:libfontconfig.so\n"; }

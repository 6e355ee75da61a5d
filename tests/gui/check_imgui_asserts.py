#!/usr/bin/env python3
"""Build check: every translation unit of the app and of ImGui's backends is compiled with
app/imgui_user_config.hpp, which keeps Dear ImGui's IM_ASSERT on in Release (NDEBUG would turn
assert() off and hide Push/Pop mismatches from the GUI tests). The command line's library
(mhascope_cli) includes no ImGui (tests/app/panel_purity_test.cpp checks it) and is left out.
Usage: check_imgui_asserts.py BUILD_DIR"""
import json
import sys

commands = json.load(open(f"{sys.argv[1]}/compile_commands.json"))
def command(c):
    return c.get("command", " ".join(c.get("arguments", [])))


gui = [c for c in commands if ("/app/" in c["file"] or "imgui_impl_" in c["file"])
       and "/mhascope_cli.dir/" not in command(c)]
missing = [c["file"] for c in gui if "IMGUI_USER_CONFIG" not in command(c)]
print(f"{len(gui)} app/backend translation units, {len(missing)} without IMGUI_USER_CONFIG")
if not gui or missing:
    raise SystemExit("ImGui asserts are off in: " + ", ".join(missing[:10]))

#!/usr/bin/env python3
"""Build check: every translation unit of the app and of ImGui's backends is compiled with
app/imgui_user_config.hpp, which keeps Dear ImGui's IM_ASSERT on in Release (NDEBUG would turn
assert() off and hide Push/Pop mismatches from the GUI tests). Usage: check_imgui_asserts.py BUILD_DIR"""
import json
import sys

commands = json.load(open(f"{sys.argv[1]}/compile_commands.json"))
gui = [c for c in commands if "/app/" in c["file"] or "imgui_impl_" in c["file"]]
missing = [c["file"] for c in gui if "IMGUI_USER_CONFIG" not in c.get("command", " ".join(c.get("arguments", [])))]
print(f"{len(gui)} app/backend translation units, {len(missing)} without IMGUI_USER_CONFIG")
if not gui or missing:
    raise SystemExit("ImGui asserts are off in: " + ", ".join(missing[:10]))

#!/usr/bin/env python3
"""Where the test command's time goes, from what a build folder already recorded.

  /usr/bin/python3 scripts/test_costs.py build [build-asan ...]

For each build folder: the compile time per target, summed over its compiler runs (job-seconds,
from Ninja's .ninja_log; on 2 cores the wall time is about half), and the test time per group of
tests (process-seconds of the last run, from CTest's CTestCostData.txt: GoogleTest cases by binary,
CLI and GUI scripts each by name). Nothing is rebuilt or rerun.
"""
import collections
import os
import re
import sys


def compile_costs(build):
    """{target: seconds} from the newest entry of each output in .ninja_log."""
    path = os.path.join(build, ".ninja_log")
    if not os.path.exists(path):
        return {}
    newest = {}
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 4:
                continue
            start, end, output = int(parts[0]), int(parts[1]), parts[3]
            newest[output] = (end - start) / 1000.0  # a rebuild's entry replaces the earlier one
    per_target = collections.Counter()
    for output, seconds in newest.items():
        m = re.search(r"CMakeFiles/([^/]+)\.dir/", output)
        target = m.group(1) if m else ("link: " + os.path.basename(output))
        per_target[target] += seconds
    return per_target


def test_costs(build):
    """{group: (tests, seconds)} from CTest's cost data of the last run."""
    path = os.path.join(build, "Testing", "Temporary", "CTestCostData.txt")
    if not os.path.exists(path):
        return {}
    groups = collections.defaultdict(lambda: [0, 0.0])
    with open(path) as f:
        for line in f:
            if line.startswith("---"):
                break  # the failed tests' list follows
            parts = line.split()
            if len(parts) != 3:
                continue
            name, cost = parts[0], float(parts[2])
            if name.startswith(("gui_", "cli_", "install_", "docs_", "build_")):
                group = name.split("_")[0] + " " + name
            elif ".shard" in name:
                group = "gtest " + name.split(".shard")[0]
            else:
                group = "gtest " + name.split(".")[0]
            groups[group][0] += 1
            groups[group][1] += cost
    return groups


def main():
    builds = sys.argv[1:] or ["build"]
    for build in builds:
        per_target = compile_costs(build)
        total = sum(per_target.values())
        print(f"== {build}: compile {total:.0f} job-seconds")
        for target, seconds in per_target.most_common(15):
            print(f"  {seconds:7.1f} s  {target}")
        groups = test_costs(build)
        if not groups:
            continue
        by_kind = collections.defaultdict(lambda: [0, 0.0])
        for group, (n, seconds) in groups.items():
            kind = group.split(" ")[0]
            by_kind[kind][0] += n
            by_kind[kind][1] += seconds
        all_seconds = sum(s for _, s in by_kind.values())
        print(f"   tests: {all_seconds:.0f} process-seconds")
        for kind, (n, seconds) in sorted(by_kind.items(), key=lambda kv: -kv[1][1]):
            print(f"  {seconds:7.1f} s  {kind} ({n} tests)")
        for group, (n, seconds) in sorted(groups.items(), key=lambda kv: -kv[1][1])[:12]:
            print(f"  {seconds:7.1f} s    {group}" + (f" ({n})" if n > 1 else ""))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
"""Summarise a meson test run as 'N passed, N failed, N skipped'.

cmocka binaries are counted per test case (their own PASSED/FAILED/SKIPPED
lines); other tests (shell scripts, fuzz replays, benchmark smoke runs) count
as one test each, except that a shell test may print its own
'TK-COUNTS: passed=N failed=N skipped=N' line. A test binary that crashed or
timed out counts as failed even if cmocka printed nothing. Skips are listed
with their reason so a machine without tracefs shows loudly what it did not
test.
"""
import json
import re
import sys

passed = failed = skipped = 0
skip_reasons = []
failures = []

def records():
    for log in sys.argv[1:]:
        for line in open(log, encoding="utf-8", errors="replace"):
            yield json.loads(line)


for t in records():
    name, result = t["name"], t["result"]
    out = (t.get("stdout") or "") + (t.get("stderr") or "")
    counts = re.search(r"TK-COUNTS: passed=(\d+) failed=(\d+) skipped=(\d+)", out)
    cm_pass = re.findall(r"\[  PASSED  \] (\d+) test", out)
    cm_fail = re.findall(r"\[  FAILED  \] (\d+) test", out)
    cm_skip = re.findall(r"\[  SKIPPED \] (\d+) test", out)
    if counts:
        p, f, s = (int(x) for x in counts.groups())
    elif cm_pass or cm_fail:
        p = sum(int(x) for x in cm_pass)
        f = sum(int(x) for x in cm_fail)
        s = sum(int(x) for x in cm_skip)
    else:
        p = 1 if result == "OK" else 0
        s = 1 if result == "SKIP" else 0
        f = 1 if result not in ("OK", "SKIP") else 0
    if result not in ("OK", "SKIP") and f == 0:
        f = 1  # crashed, timed out, or a sanitizer fired after the tests
    passed, failed, skipped = passed + p, failed + f, skipped + s
    if f:
        failures.append(f"{name} ({result})")
    for m in re.finditer(r"^(?:SKIP|\[  SKIPPED \]).*$", out, re.M):
        skip_reasons.append(f"{name}: {m.group(0).strip()}")
    if s and not any(r.startswith(name + ":") for r in skip_reasons):
        skip_reasons.append(f"{name}: skipped (see meson-logs/testlog.txt)")

if skip_reasons:
    print("\n!!! SKIPPED TESTS (these paths were NOT tested on this machine):")
    for r in skip_reasons:
        print("!!!   " + r)
if failures:
    print("\nFAILED: " + ", ".join(failures))
print(f"\n{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)

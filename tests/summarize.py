#!/usr/bin/env python3
"""Prints 'N passed, N failed' over every TAP check of a meson test run.

Reads meson-logs/testlog.json: each test's TAP lines count one by one; a test that failed without
printing any 'not ok' line (a crash, a timeout, a bad plan) counts as one failure."""
import json
import re
import sys

passed = failed = 0
for line in open(sys.argv[1]):
    test = json.loads(line)
    out = test.get("stdout", "") or ""
    ok = len(re.findall(r"^ok\b", out, re.M))
    not_ok = len(re.findall(r"^not ok\b", out, re.M))
    passed += ok
    failed += not_ok
    for failure in re.findall(r"^not ok\b.*$", out, re.M):
        print("%s: %s" % (test.get("name"), failure))
    if test.get("result") not in ("OK", "EXPECTEDFAIL", "SKIP") and not_ok == 0:
        failed += 1
        print("failed without a TAP failure: %s (%s)" % (test.get("name"), test.get("result")))
if passed + failed == 0:
    print("no test ran")
    failed = 1
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)

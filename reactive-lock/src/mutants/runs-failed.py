"""Reads surefire's XML reports on stdin; prints how many runs the test method that failed most failed.

A test that failed its first run is reported with <failure> (or <error>) and one <rerunFailure> per
rerun that failed too; one that passed a rerun is reported flaky, with one <flakyFailure> per failed run.
"""
import re
import sys

runs = [0]
for case in re.findall(r'<testcase\b[^>]*?(?:/>|>.*?</testcase>)', sys.stdin.read(), re.S):
    if re.search(r'<(failure|error)\b', case):
        runs.append(1 + len(re.findall(r'<rerun(Failure|Error)\b', case)))
    else:
        runs.append(len(re.findall(r'<flaky(Failure|Error)\b', case)))
print(max(runs))

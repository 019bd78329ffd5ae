#!/usr/bin/env python3
"""Prints the build outputs (paths relative to the build dir) that the tests
of the given meson suites need, so that a build can make only those:
    ninja -C BUILD $(.ci/suite-targets.py BUILD unit abi server)
"""
import json
import os
import subprocess
import sys

build, suites = sys.argv[1], {"vt:" + s for s in sys.argv[2:]}
meson = os.path.join(os.path.dirname(sys.executable), "meson")


def introspect(what):
    return json.loads(subprocess.check_output([meson, "introspect", build, what]))


targets = {t["id"]: t for t in introspect("--targets")}
outputs = set()
for test in introspect("--tests"):
    if not suites & set(test["suite"]):
        continue
    for dep in test["depends"]:
        for f in targets[dep]["filename"]:
            outputs.add(os.path.relpath(f, os.path.abspath(build)))
print("\n".join(sorted(outputs)))

#!/usr/bin/env python3
"""Prints the build outputs (paths relative to the build dir) that the given
meson suites and tests need, so that a build can make only those:
    ninja -C BUILD $(.ci/suite-targets.py BUILD abi server --tests gguf kv)
"""
import argparse
import json
import os
import subprocess
import sys

ap = argparse.ArgumentParser()
ap.add_argument("build")
ap.add_argument("suites", nargs="*", help="whole suites (unit, abi, server, ...)")
ap.add_argument("--tests", nargs="*", default=[], help="single tests, by their meson names")
args = ap.parse_args()
suites = {"vt:" + s for s in args.suites}
meson = os.path.join(os.path.dirname(sys.executable), "meson")


def introspect(what):
    return json.loads(subprocess.check_output([meson, "introspect", args.build, what]))


targets = {t["id"]: t for t in introspect("--targets")}
outputs = set()
found = set()
for test in introspect("--tests"):
    if not (suites & set(test["suite"]) or test["name"] in args.tests):
        continue
    found.add(test["name"])
    for dep in test["depends"]:
        for f in targets[dep]["filename"]:
            outputs.add(os.path.relpath(f, os.path.abspath(args.build)))
missing = set(args.tests) - found
if missing:
    sys.exit("suite-targets: no such tests: " + ", ".join(sorted(missing)))
print("\n".join(sorted(outputs)))

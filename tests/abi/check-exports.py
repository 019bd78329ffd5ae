#!/usr/bin/env python3
"""The exported symbols of libvt are exactly the VT_API functions of include/vt.

Parses every `VT_API` declaration in include/vt/*.h and compares the function
names with the dynamic symbols the shared library defines (nm -D
--defined-only). Fails when an exported symbol does not start with vt_, when a
declared function is not exported (missing: a link error for users), or when
the library exports a vt_ function no header declares (extra: it would become
ABI by accident).

The header parser lives in vt_abi_headers.py (shared with
check-python-symbols.py).

usage: check-exports.py --lib build/libvt.so --headers include/vt [--nm nm]
"""
import argparse
import pathlib
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from vt_abi_headers import declared  # noqa: E402  (beside this script)


def exported(lib: str, nm: str) -> set[str]:
    out = subprocess.run([nm, "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        kind, name = parts[-2], parts[-1]
        if kind == "A":  # version-node markers, not code or data
            continue
        names.add(name.split("@", 1)[0])
    return names


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--headers", required=True, type=pathlib.Path)
    ap.add_argument("--nm", default="nm")
    a = ap.parse_args()

    decl = declared(a.headers)
    exp = exported(a.lib, a.nm)
    ok = True
    if not decl:
        print(f"no VT_API declarations found under {a.headers}", file=sys.stderr)
        return 1
    foreign = sorted(s for s in exp if not s.startswith("vt_"))
    if foreign:
        ok = False
        print(f"exported symbols without the vt_ prefix ({len(foreign)}):")
        for s in foreign:
            print(f"  {s}")
    missing = sorted(decl - exp)
    if missing:
        ok = False
        print(f"declared in include/vt but not exported ({len(missing)}):")
        for s in missing:
            print(f"  {s}")
    extra = sorted(s for s in exp - decl if s.startswith("vt_"))
    if extra:
        ok = False
        print(f"exported but declared in no public header ({len(extra)}):")
        for s in extra:
            print(f"  {s}")
    if ok:
        print(f"{len(decl)} VT_API functions, all exported, nothing else exported")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

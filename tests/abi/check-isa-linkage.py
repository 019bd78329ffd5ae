#!/usr/bin/env python3
"""The per-instruction-set kernel archives define no weak or unique symbols.

Each x86 kernel archive (backends/cpu/kernels/meson.build) is compiled with its own
-m flags and reached only after a CPU check. A weak definition there (an
inline function, a class member, a template instantiation with external
linkage) is one the linker may pick for every caller of that symbol in the
program, AVX2-only code included: a copy built with -mavx512f would then run
on a CPU without AVX-512. So the archives' helpers must have internal linkage
(static inline, anonymous namespaces); this fails, naming them, when any
weak (W, V) or unique (u) symbol is defined.

usage: check-isa-linkage.py --nm nm ARCHIVE...
"""
import argparse
import subprocess
import sys


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nm", default="nm")
    ap.add_argument("archives", nargs="+")
    a = ap.parse_args()
    bad = []
    for lib in a.archives:
        out = subprocess.run([a.nm, "-C", "--defined-only", lib], check=True,
                             capture_output=True, text=True).stdout
        for line in out.splitlines():
            parts = line.split(maxsplit=2)
            # DW.ref.__gxx_personality_v0: a pointer to the C++ unwinder's
            # personality routine that GCC emits as weak hidden data when a
            # file has cleanups (sanitizer builds add them); data, no code,
            # the same in every copy.
            if len(parts) == 3 and parts[2].startswith("DW.ref."):
                continue
            if len(parts) == 3 and parts[1] in ("W", "V", "u"):
                bad.append(f"{lib}: {parts[1]} {parts[2]}")
    for b in bad:
        print(b)
    print(f"{len(a.archives)} archives, {len(bad)} weak or unique symbols")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

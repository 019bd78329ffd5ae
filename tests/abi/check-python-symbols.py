#!/usr/bin/env python3
"""The Python extension module reaches libvt through the public C ABI only.

Given the built extension module (bindings/python, a meson extension_module),
fails when:
  1. it imports (undefined dynamic symbol, nm -D --undefined-only) a vt_
     function that no include/vt/*.h declares with VT_API: it would be
     reaching into libvt's internals;
  2. it imports no vt_ function at all, or imports some without a NEEDED
     entry for libvt.so.<major> (readelf -d): then it does not use libvt.so;
  3. it exports (defines in its dynamic symbol table) any vt_ symbol: it would
     shadow or duplicate libvt's ABI;
  4. it carries code of lib/ statically. Heuristic, on the full symbol table
     (nm --defined-only, local symbols included; the dynamic table if the
     module is stripped):
       a. it defines a function named like a VT_API function (lib/api linked
          in), or
       b. with --libvt whose symbol table is present (the build tree's copy is
          never stripped): it defines a C++ symbol in namespace vt:: whose
          demangled name is exactly one libvt defines (vt::tok::..., vt::Model
          ...). Lib's internals cannot appear under their own names in a module
          that includes only include/vt/*.h, which has no C++ names, so any
          such match is lib code compiled or linked into the module. The
          module's own classes, in whatever namespace, never match.
       c. without --libvt (or a stripped libvt): any defined symbol whose
          demangled name starts with "vt::" (after "vtable for " and the like)
          outside the namespaces given with --allow-namespace.
Exit status: 0 ok, 1 a violation, 77 (meson's skip) when the module path is
empty or does not exist yet (the bindings are optional).

usage: check-python-symbols.py MODULE --headers include/vt [--libvt libvt.so]
           [--nm nm] [--readelf readelf] [--allow-namespace vt::python ...]
"""
import argparse
import os
import re
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from vt_abi_headers import declared  # noqa: E402  (beside this script)

SKIP = 77
# Demangler prefixes of special symbols of a class (vtables, RTTI, thunks).
SPECIAL = re.compile(r"^(?:(?:vtable|VTT|typeinfo|typeinfo name|construction vtable|"
                     r"guard variable|reference temporary #\d+|TLS init function|"
                     r"TLS wrapper function|(?:non-)?virtual thunk|covariant return "
                     r"thunk) (?:for|to) )+")


def nm_lines(nm, args, path):
    """(type letter, name) of each symbol line; None if the file has no such
    symbol table ("no symbols")."""
    p = subprocess.run([nm] + args + [path], capture_output=True, text=True)
    if "no symbols" in p.stderr and not p.stdout.strip():  # GNU nm: status 0 or 1
        return None
    if p.returncode != 0:
        raise RuntimeError(f"{nm} {' '.join(args)} {path}: {p.stderr.strip()}")
    out = []
    for line in p.stdout.splitlines():
        # "<addr> T name" or "         U name"; C++ names (-C) contain spaces.
        m = re.match(r"^\s*(?:[0-9a-fA-F]+\s+)?([A-Za-z?-])\s+(.*)$", line)
        if m:
            out.append((m.group(1), m.group(2)))
    return out


def strip_version(name):
    return name.split("@", 1)[0]


def needed_libs(readelf, path):
    dyn = subprocess.run([readelf, "-d", path], check=True, capture_output=True,
                         text=True).stdout
    return [line.split("[", 1)[-1].rstrip("]") for line in dyn.splitlines()
            if "(NEEDED)" in line]


def vt_cxx_names(nm, path):
    """Demangled defined symbols in namespace vt:: (None: no symbol table)."""
    lines = nm_lines(nm, ["-C", "--defined-only"], path)
    if lines is None:
        return None
    return {name for _, name in lines if re.search(r"(?<![\w:])vt::", name)}


def main():
    ap = argparse.ArgumentParser(description="the Python module uses only the public vt ABI")
    ap.add_argument("module", nargs="?", default="")
    ap.add_argument("--headers", required=True)
    ap.add_argument("--libvt", help="the built libvt.so (enables the exact check 4b)")
    ap.add_argument("--nm", default="nm")
    ap.add_argument("--readelf", default="readelf")
    ap.add_argument("--allow-namespace", action="append", default=[],
                    help="the module's own C++ namespace under vt:: (check 4c only)")
    a = ap.parse_args()

    if not a.module or not os.path.isfile(a.module) or os.path.getsize(a.module) == 0:
        print(f"skip: no Python extension module at {a.module!r}")
        return SKIP
    decl = declared(a.headers)
    if not decl:
        print(f"no VT_API declarations found under {a.headers}", file=sys.stderr)
        return 1
    problems = []

    def report(title, items):
        if items:
            problems.append(title)
            print(f"{title} ({len(items)}):")
            for s in sorted(items)[:50]:
                print(f"  {s}")
            if len(items) > 50:
                print(f"  ... {len(items) - 50} more")

    # 1, 2: what it imports.
    undefined = {strip_version(n) for _, n in nm_lines(a.nm, ["-D", "--undefined-only"],
                                                       a.module) or []}
    imported = {n for n in undefined if n.startswith("vt_")}
    report("imports vt_ symbols that no public header declares", imported - decl)
    if not imported:
        report("imports no vt_ function at all (does it use libvt.so?)", ["(none imported)"])
    else:
        needed = needed_libs(a.readelf, a.module)
        if not any(re.match(r"libvt\.so\.\d+$", n) for n in needed):
            report("imports vt_ functions but has no NEEDED libvt.so.<major>",
                   [f"NEEDED: {', '.join(needed) or '(none)'}"])

    # 3: what it exports.
    dyn_defined = nm_lines(a.nm, ["-D", "--defined-only"], a.module) or []
    report("exports vt_ symbols (only libvt may)",
           {strip_version(n) for _, n in dyn_defined if n.startswith("vt_")})

    # 4: lib/ code inside the module.
    full = nm_lines(a.nm, ["--defined-only"], a.module)
    table = "full"
    if full is None:  # stripped: only the dynamic table is left
        full, table = dyn_defined, "dynamic (module is stripped: weaker check)"
    report("defines VT_API functions itself (lib/api linked in)",
           {strip_version(n) for _, n in full if strip_version(n) in decl})
    mod_vt = vt_cxx_names(a.nm, a.module)
    if mod_vt is None:
        mod_vt = {n for _, n in nm_lines(a.nm, ["-C", "-D", "--defined-only"], a.module) or []
                  if re.search(r"(?<![\w:])vt::", n)}
    lib_vt = vt_cxx_names(a.nm, a.libvt) if a.libvt else None
    if lib_vt:
        how = f"exact names shared with {os.path.basename(a.libvt)}'s vt:: symbols"
        report("defines lib/ C++ symbols (statically linked lib code)", mod_vt & lib_vt)
    else:
        how = "any vt:: symbol outside --allow-namespace"
        allowed = tuple(ns.rstrip(":") + "::" for ns in a.allow_namespace)
        report("defines symbols in namespace vt:: (lib code linked in?)",
               {n for n in mod_vt if SPECIAL.sub("", n).startswith("vt::")
                and not SPECIAL.sub("", n).startswith(allowed)})

    if problems:
        print(f"\n{os.path.basename(a.module)}: {len(problems)} problem(s)")
        return 1
    print(f"{os.path.basename(a.module)}: imports {len(imported)} vt_ functions, all declared "
          f"in include/vt; exports none; no lib/ code ({table} symbol table; {how})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

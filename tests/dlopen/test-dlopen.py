#!/usr/bin/env python3
"""Tests of the dlopen consumers of libvt (examples/dlopen).

usage:
  test-dlopen.py run --consumer PROGRAM [--python PY] --lib LIBVT
                 --write-tiny-model EXE [--vt-generate EXE]
                 [--fake-newer-major SO] [--fake-incomplete SO]
  test-dlopen.py linkage VT_DLOPEN [--readelf readelf] [--nm nm]

`run` drives one consumer (vt-dlopen, or vt_ctypes.py with --python) on the
tiny random-weight Llama that write-tiny-model writes: its greedy output must
be non-empty and byte-identical to `vt-generate --temp 0` on the same model,
prompt, -n and -t (when vt-generate is built), both with --lib and by SONAME
through LD_LIBRARY_PATH; a missing model, a missing library, a library of
another ABI major and one lacking symbols must each fail with exit status 1
and a message that says so. `linkage` checks that vt-dlopen does not link
libvt: no NEEDED libvt entry and no undefined vt_ symbol. Standard library
only.
"""
import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from script_checks import check, exit_status  # noqa: E402

# (prompt, tokens): "zq" makes the tiny model emit byte tokens (0xF3) that are
# not valid UTF-8 alone, so the byte path of each consumer is compared too.
PROMPTS = [("the cat sat", 24), ("zq", 24), ("Hello world", 8)]
THREADS = "2"


def describe(r):
    return (f"  command {r.args}\n  exit status {r.returncode}\n"
            f"  stdout {r.stdout[:300]!r}\n  stderr {r.stderr[-1500:]!r}")


def run(cmd, env=None, timeout=120):
    return subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env, timeout=timeout)


def expect_failure(name, cmd, phrases, env=None, status=1):
    r = run(cmd, env=env)
    err = r.stderr.decode("utf-8", "replace")
    missing = [p for p in phrases if p.lower() not in err.lower()]
    detail = describe(r)
    if missing:
        detail += f"\n  missing phrases {missing}"
    check(name, r.returncode == status and r.stdout == b"" and not missing, detail)


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    env.update(extra)
    return env


def cmd_run(a):
    consumer = ([a.python, a.consumer] if a.python else [a.consumer])
    label = os.path.basename(a.consumer)
    env = clean_env()
    with tempfile.TemporaryDirectory(prefix="vt-test-dlopen-") as tmp:
        model = os.path.join(tmp, "tiny.gguf")
        subprocess.run([a.write_tiny_model, model], check=True)

        for prompt, n in PROMPTS:
            gen_args = ["-m", model, "-p", prompt, "-n", str(n), "-t", THREADS]
            r = run(consumer + ["--lib", a.lib] + gen_args, env=env)
            check(f"{label} --lib: '{prompt}' -n {n} exits 0 with output",
                  r.returncode == 0 and len(r.stdout) > 0, describe(r))
            if a.vt_generate:
                ref = run([a.vt_generate] + gen_args + ["--temp", "0"], env=env)
                check(f"vt-generate --temp 0 on '{prompt}' exits 0", ref.returncode == 0,
                      describe(ref))
                check(f"{label} output equals vt-generate --temp 0 on '{prompt}'",
                      r.stdout == ref.stdout and len(ref.stdout) > 0,
                      f"  {label}: {r.stdout!r}\n  vt-generate: {ref.stdout!r}")
            # By SONAME alone: the loader's search (LD_LIBRARY_PATH) finds it.
            by_name = run(consumer + gen_args,
                          env=clean_env(LD_LIBRARY_PATH=os.path.dirname(a.lib)))
            check(f"{label} by SONAME via LD_LIBRARY_PATH: same output on '{prompt}'",
                  by_name.returncode == 0 and by_name.stdout == r.stdout, describe(by_name))
        if not a.vt_generate:
            print("note: vt-generate is not built (no CLI11): outputs not compared with it")

        missing_model = os.path.join(tmp, "no-such-model.gguf")
        expect_failure(f"{label}: a missing model fails with the file's name",
                       consumer + ["--lib", a.lib, "-m", missing_model, "-p", "hi", "-n", "4"],
                       ["no-such-model.gguf", "no such file"], env=env)
        missing_lib = os.path.join(tmp, "nowhere", "libvt.so.1")
        expect_failure(f"{label}: a missing library fails naming it",
                       consumer + ["--lib", missing_lib, "-m", model, "-p", "hi"],
                       ["cannot load", missing_lib], env=env)
        if a.fake_newer_major:
            expect_failure(f"{label}: a library of another ABI major is refused",
                           consumer + ["--lib", a.fake_newer_major, "-m", model, "-p", "hi"],
                           ["has ABI version", "needs major"], env=env)
        if a.fake_incomplete:
            expect_failure(f"{label}: a library lacking a function is refused naming it",
                           consumer + ["--lib", a.fake_incomplete, "-m", model, "-p", "hi"],
                           ["no symbol vt_last_error"], env=env)
        expect_failure(f"{label}: no model option is a usage error",
                       consumer + ["--lib", a.lib, "-p", "hi"], ["model"], env=env, status=2)


def cmd_linkage(a):
    dyn = subprocess.run([a.readelf, "-d", a.exe], check=True, capture_output=True,
                         text=True).stdout
    needed = [line.split("[", 1)[-1].rstrip("]") for line in dyn.splitlines()
              if "(NEEDED)" in line]
    print(f"NEEDED: {', '.join(needed) or '(none)'}")
    check("vt-dlopen has no NEEDED libvt entry",
          not any("libvt" in n for n in needed), f"  NEEDED {needed}")
    und = subprocess.run([a.nm, "-D", "--undefined-only", a.exe], check=True,
                         capture_output=True, text=True).stdout
    vt_und = [line.split()[-1] for line in und.splitlines()
              if line.split() and line.split()[-1].startswith("vt_")]
    check("vt-dlopen references no vt_ symbol at link time", not vt_und,
          f"  undefined vt_ symbols {vt_und}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("run")
    r.add_argument("--consumer", required=True)
    r.add_argument("--python", help="interpreter for a Python consumer")
    r.add_argument("--lib", required=True)
    r.add_argument("--write-tiny-model", required=True)
    r.add_argument("--vt-generate")
    r.add_argument("--fake-newer-major")
    r.add_argument("--fake-incomplete")
    k = sub.add_parser("linkage")
    k.add_argument("exe")
    k.add_argument("--readelf", default="readelf")
    k.add_argument("--nm", default="nm")
    a = ap.parse_args()
    if a.mode == "run":
        cmd_run(a)
    else:
        cmd_linkage(a)
    return exit_status()


if __name__ == "__main__":
    sys.exit(main())

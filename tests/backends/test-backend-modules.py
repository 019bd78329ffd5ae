#!/usr/bin/env python3
"""Backend modules as a user meets them: found, refused and absent.

usage: test-backend-modules.py VT_GENERATE WRITE_TINY_MODEL LIBVT FAKE FAKE_OLD FAKE_NONE

FAKE, FAKE_OLD, FAKE_NONE: fake-backend.cpp built as a usable module
(device "fake0", supports no op), as one of another backend interface
version, and as one without a device. Checks that:
  - $VT_BACKEND_PATH modules are loaded: fake0 is listed, the other two are
    skipped with a warning or silently, and libvt still runs;
  - a model on fake0 (weights uploaded into its memory, every op run on the
    CPU through the copies of the graph executor) prints exactly the CPU's
    greedy tokens, and the fallback is logged; so do layer splits
    (--n-gpu-layers 0 and 1 of the tiny model's 2);
  - libvt alone in a directory, with no module anywhere beside it, lists
    only the CPU and runs there (a machine without the Vulkan module or
    libvulkan);
  - an unknown --device fails cleanly, naming the devices there are.
"""
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from script_checks import check, exit_status  # noqa: E402


def run(cmd, env=None, timeout=300):
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout, env=env)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def fallback_count(err):
    """The nodes vt-generate reports as run on the CPU for the device (0: no such line)."""
    for line in err.splitlines():
        if "nodes ran on the CPU for the device" in line:
            return int(line.split("vt-generate: ", 1)[1].split()[0])
    return 0


def main():
    if len(sys.argv) != 7:
        print(__doc__, file=sys.stderr)
        return 2
    gen, write_tiny, libvt, fake, fake_old, fake_none = sys.argv[1:]
    with tempfile.TemporaryDirectory(prefix="vt-test-backends-") as tmp:
        mods = os.path.join(tmp, "modules")
        os.mkdir(mods)
        # The loader takes libvt-backend-<name>.so files.
        for src, name in ((fake, "fake"), (fake_old, "fakeold"), (fake_none, "fakenone")):
            shutil.copy(src, os.path.join(mods, f"libvt-backend-{name}.so"))
        with open(os.path.join(mods, "libvt-backend-broken.so"), "wb") as f:
            f.write(b"not an ELF file")
        env = dict(os.environ, VT_BACKEND_PATH=mods)

        rc, out, err = run([gen, "--list-devices"], env)
        names = [line.split()[0] for line in out.splitlines() if line.strip()]
        check("modules: cpu first, fake0 listed",
              rc == 0 and names[:1] == ["cpu"] and "fake0" in names, f"rc {rc}\n{out}\n{err}")
        check("modules: another interface version is skipped with a warning",
              "fakeold" not in out and "backend interface 1" in err, err)
        check("modules: a file that is not a module is skipped with a warning",
              "libvt-backend-broken.so cannot be loaded" in err, err)

        model = os.path.join(tmp, "tiny.gguf")
        subprocess.run([write_tiny, model], check=True)
        greedy = ["-m", model, "-p", "hello world", "-n", "24", "--temp", "0"]
        rc_c, out_c, err_c = run([gen] + greedy + ["--device", "cpu"], env)
        rc_f, out_f, err_f = run([gen] + greedy + ["--device", "fake0"], env)
        check("fallback: the CPU run works", rc_c == 0 and out_c, err_c)
        check("fallback: fake0 prints the CPU's greedy tokens exactly",
              rc_f == 0 and out_f == out_c, f"cpu {out_c!r}\nfake0 {out_f!r}\n{err_f}")
        check("fallback: the weights were uploaded and the fallback logged",
              "weights on fake0 (2 of 2 layers)" in err_f and "runs on the CPU, with copies" in err_f, err_f)
        # vt_context_stats counts the fallbacks (fake0 runs no op: every node).
        counted = fallback_count(err_f)
        check("fallback: counted in vt_context_stats", counted > 0, err_f)
        for ngl in ("0", "1"):
            rc_n, out_n, err_n = run([gen] + greedy + ["--device", "fake0", "--n-gpu-layers", ngl], env)
            check(f"split: --n-gpu-layers {ngl} prints the CPU's greedy tokens exactly",
                  rc_n == 0 and out_n == out_c, f"{out_n!r}\n{err_n}")
            # The activations stay in the arena on fake0, so the CPU's layers
            # copy them too: counted as fallbacks, as many as with every layer.
            n = fallback_count(err_n)
            check(f"split: --n-gpu-layers {ngl} counts its fallbacks", n == counted, f"{n} of {counted}\n{err_n}")

        rc, out, err = run([gen] + greedy + ["--device", "gpu7"], env)
        check("an unknown device fails cleanly and lists the devices",
              rc == 1 and out == "" and "no device named 'gpu7'" in err and "fake0" in err, f"rc {rc}\n{err}")

        # libvt alone: no $VT_BACKEND_PATH, no vt/ or backends/ beside it.
        alone = os.path.join(tmp, "alone")
        os.mkdir(alone)
        real = os.path.realpath(libvt)
        for link in ("libvt.so.1", os.path.basename(real)):
            shutil.copy(real, os.path.join(alone, link))
        env_alone = {k: v for k, v in os.environ.items() if k != "VT_BACKEND_PATH"}
        env_alone["LD_LIBRARY_PATH"] = alone
        rc, out, err = run([gen, "--list-devices"], env_alone)
        names = [line.split()[0] for line in out.splitlines() if line.strip()]
        check("absent modules: only the CPU", rc == 0 and names == ["cpu"], f"rc {rc}\n{out}\n{err}")
        rc, out, err = run([gen] + greedy, env_alone)
        check("absent modules: the model runs on the CPU", rc == 0 and out == out_c, f"{out!r}\n{err}")
    return exit_status()


if __name__ == "__main__":
    sys.exit(main())

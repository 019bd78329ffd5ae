"""vt.devices() and loading on a device: Model(device=), LLM(device=).

The device list is made once per process, so the cases that need the stand-in
module (tests/backends/fake: device "fake0", which computes nothing, so every
op runs on the CPU through the executor's copies) run in a child process
with VT_BACKEND_PATH set.
"""
import os
import subprocess
import sys

import pytest

import vt


def test_cpu_is_first():
    devs = vt.devices()
    assert devs[0]["name"] == "cpu" and devs[0]["backend"] == "cpu" and devs[0]["type"] == "cpu"
    assert devs[0]["memory_total"] > 0 and 0 < devs[0]["memory_free"] <= devs[0]["memory_total"]
    assert len({d["name"] for d in devs}) == len(devs)


def test_model_on_cpu(tiny_path):
    m = vt.Model(tiny_path, device="cpu")
    assert m.device == "cpu" and m.uploaded_bytes == 0


def test_unknown_device(tiny_path):
    with pytest.raises(vt.VtNotFound, match="no device named 'gpu9'"):
        vt.Model(tiny_path, device="gpu9")


CHILD = r"""
import sys, vt
path = sys.argv[1]
names = [d["name"] for d in vt.devices()]
assert names[0] == "cpu" and "fake0" in names, names
cpu = vt.LLM(path, n_threads=1)
fake = vt.LLM(path, n_threads=1, device="fake0")
assert fake.model.device == "fake0" and fake.model.uploaded_bytes > 0
p = vt.SamplingParams(max_tokens=16, temperature=0)
prompts = ["hello world", "the quick brown fox", "one two"]
a = [o.token_ids for o in cpu.generate(prompts, p)]
b = [o.token_ids for o in fake.generate(prompts, p)]
assert a == b, (a, b)
try:
    vt.Context(fake.model, backend="cpu")
    raise SystemExit("a cpu context over fake0 weights was made")
except vt.VtInvalidArgument as e:
    assert "weights are on fake0" in str(e), e
print("ok")
"""


def test_generate_on_a_fallback_device(tiny_path):
    fake_dir = os.environ.get("VT_FAKE_BACKEND_DIR")
    if not fake_dir:
        pytest.skip("VT_FAKE_BACKEND_DIR is set by meson test")
    env = dict(os.environ, VT_BACKEND_PATH=fake_dir)
    p = subprocess.run([sys.executable, "-c", CHILD, str(tiny_path)], env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stdout + p.stderr
    assert "fake0 cannot run MUL_MAT" in p.stderr


# The serving engine's default KV pool on a device with little memory: the
# weights and the compute arena first, then 90% of what is left, allocated in
# buffers of at most the device's largest allocation (fake0's is 8 MiB); an
# explicit budget that cannot fit fails when the context is made, saying
# what fits; vt_seq's default context shrinks to what fits.
SMALL_DEVICE = r"""
import re, sys, vt
path = sys.argv[1]
dev = [d for d in vt.devices() if d["name"] == "fake0"][0]
assert dev["memory_total"] == 48 << 20, dev
llm = vt.LLM(path, n_threads=1, device="fake0", max_model_len=2048, max_num_seqs=256)
free_after_load = [d for d in vt.devices() if d["name"] == "fake0"][0]["memory_free"]
out = llm.generate(["hello world", "one two"], vt.SamplingParams(max_tokens=4, temperature=0))
assert all(len(o.token_ids) == 4 for o in out), out
s = llm.context.stats()
pool = s["kv_cache_bytes"]
# Over 8 MiB: several buffers. Within 90% of what the weights left.
assert 8 << 20 < pool <= free_after_load * 0.9, (pool, free_after_load)
try:
    vt.LLM(llm.model, kv_cache_memory="64MiB")
    raise SystemExit("a 64 MiB pool on a 48 MiB device was accepted")
except vt.VtOutOfMemory as e:
    m = re.search(r"64\.0 MiB does not fit; ([0-9.]+) MiB fits \(90% of fake0's free memory", str(e))
    assert m and 0 < float(m.group(1)) < 48, e
print("ok")
"""


def test_default_kv_pool_fits_a_small_device(tiny_path):
    fake_dir = os.environ.get("VT_FAKE_BACKEND_DIR")
    if not fake_dir:
        pytest.skip("VT_FAKE_BACKEND_DIR is set by meson test")
    env = dict(os.environ, VT_BACKEND_PATH=fake_dir, VT_FAKE_MEMORY_MIB="48")
    p = subprocess.run([sys.executable, "-c", SMALL_DEVICE, str(tiny_path)], env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stdout + p.stderr


# The same rule on Mesa's lavapipe (a Vulkan device on the CPU: one 2 GiB
# heap and allocations of at most 2 GiB): a default pool that would want far
# more (256 requests of 64K tokens) is cut to what the device holds, and
# generation works; the load line names the bound.
LAVAPIPE = r"""
import sys, vt
path = sys.argv[1]
devs = {d["name"]: d for d in vt.devices()}
if "vulkan0" not in devs:
    print("skip")
    raise SystemExit(0)
llm = vt.LLM(path, n_threads=1, device="vulkan0", max_num_seqs=256, max_model_len=65536)
out = llm.generate(["hello world"], vt.SamplingParams(max_tokens=4, temperature=0))
assert len(out[0].token_ids) == 4, out
pool = llm.context.stats()["kv_cache_bytes"]
assert 0 < pool <= devs["vulkan0"]["memory_total"] * 0.9, (pool, devs["vulkan0"])
print("ok")
"""


def test_default_kv_pool_fits_lavapipe(tiny_path):
    icd = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
    if not os.path.exists(icd):
        pytest.skip("Mesa's lavapipe is not installed")
    env = dict(os.environ, VK_DRIVER_FILES=icd)
    p = subprocess.run([sys.executable, "-c", LAVAPIPE, str(tiny_path)], env=env, capture_output=True, text=True,
                       timeout=600)
    if p.stdout.strip() == "skip":
        pytest.skip("no Vulkan device (the backend module is not built)")
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stdout + p.stderr

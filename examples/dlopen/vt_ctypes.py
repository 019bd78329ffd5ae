#!/usr/bin/env python3
"""Greedy text completion through libvt with ctypes: standard library only.

The C ABI reached from Python with no compiled glue: the script loads
libvt.so.<ABI_MAJOR>, checks its ABI version, declares the argument and
result types of each function it calls, mirrors the params structs of
include/vt (struct_size first, filled by the library's *_params_init) and runs
load -> tokenize -> feed/step -> greedy sampling, printing the continuation
to stdout (byte for byte what `vt-generate --temp 0` prints for the same model,
prompt and -n). On failure it prints "vt_ctypes: <vt_last_error()>" on stderr
and exits 1.

usage: vt_ctypes.py [--lib PATH] -m MODEL -p PROMPT [-n N] [-t THREADS]

Without --lib the library is found by its SONAME (LD_LIBRARY_PATH,
ld.so.cache), as dlopen() does.
"""
import argparse
import ctypes
import sys
from ctypes import (POINTER, byref, c_bool, c_char, c_char_p, c_float, c_int,
                    c_int32, c_size_t, c_uint32, c_void_p)

# The ABI this script was written against (include/vt/vt_version.h): a
# library is compatible when its major is equal and its minor is not older.
ABI_MAJOR = 1
ABI_MINOR = 0
SONAME = f"libvt.so.{ABI_MAJOR}"

# vt_status values used here (VT_STATUS_LIST in vt_common.h).
VT_OK = 0
VT_ERR_CONTEXT_FULL = -7
VT_ERR_BUFFER_TOO_SMALL = -8
# vt_tokenize_flags.
VT_TOKENIZE_ADD_SPECIAL = 1 << 0
VT_TOKENIZE_PARSE_SPECIAL = 1 << 1
VT_TOKEN_NULL = -1

vt_status = c_int          # a C enum: int-sized on every supported ABI
vt_token = c_int32
vt_progress_callback = ctypes.CFUNCTYPE(c_bool, c_float, c_void_p)


# Params structs, field for field as in the headers (ctypes applies the
# platform's C alignment rules, as the compiler does).
class vt_model_params(ctypes.Structure):
    _fields_ = [("struct_size", c_uint32),
                ("progress", vt_progress_callback),
                ("progress_user_data", c_void_p),
                ("use_mmap", c_bool)]


class vt_context_params(ctypes.Structure):
    _fields_ = [("struct_size", c_uint32),
                ("n_threads", c_uint32),
                ("backend", c_char_p),
                ("n_batch", c_uint32)]


class vt_seq_params(ctypes.Structure):
    _fields_ = [("struct_size", c_uint32),
                ("n_ctx", c_uint32),
                ("logits_all", c_bool)]


# Opaque handles: pointers to incomplete structs.
class vt_model(ctypes.Structure):
    pass


class vt_tokenizer(ctypes.Structure):
    pass


class vt_context(ctypes.Structure):
    pass


class vt_seq(ctypes.Structure):
    pass


class vt_sampler(ctypes.Structure):
    pass


# name: (restype, argtypes), exactly the prototypes of include/vt/*.h.
PROTOTYPES = {
    "vt_abi_version": (c_uint32, []),
    "vt_version": (c_char_p, []),
    "vt_last_error": (c_char_p, []),
    "vt_status_str": (c_char_p, [vt_status]),
    "vt_model_params_init": (None, [POINTER(vt_model_params)]),
    "vt_model_load": (vt_status, [c_char_p, POINTER(vt_model_params),
                                  POINTER(POINTER(vt_model))]),
    "vt_model_destroy": (None, [POINTER(vt_model)]),
    "vt_model_tokenizer": (vt_status, [POINTER(vt_model), POINTER(POINTER(vt_tokenizer))]),
    "vt_tokenize": (vt_status, [POINTER(vt_tokenizer), c_char_p, c_size_t, c_uint32,
                                POINTER(vt_token), c_size_t, POINTER(c_size_t)]),
    "vt_token_to_piece": (vt_status, [POINTER(vt_tokenizer), vt_token, c_bool,
                                      POINTER(c_char), c_size_t, POINTER(c_size_t)]),
    "vt_token_is_eog": (c_bool, [POINTER(vt_tokenizer), vt_token]),
    "vt_context_params_init": (None, [POINTER(vt_context_params)]),
    "vt_context_create": (vt_status, [POINTER(vt_model), POINTER(vt_context_params),
                                      POINTER(POINTER(vt_context))]),
    "vt_context_destroy": (None, [POINTER(vt_context)]),
    "vt_seq_params_init": (None, [POINTER(vt_seq_params)]),
    "vt_seq_create": (vt_status, [POINTER(vt_context), POINTER(vt_seq_params),
                                  POINTER(POINTER(vt_seq))]),
    "vt_seq_destroy": (None, [POINTER(vt_seq)]),
    "vt_seq_feed": (vt_status, [POINTER(vt_seq), POINTER(vt_token), c_size_t]),
    "vt_seq_step": (vt_status, [POINTER(vt_seq)]),
    "vt_seq_logits": (vt_status, [POINTER(vt_seq), c_int32, POINTER(POINTER(c_float)),
                                  POINTER(c_size_t)]),
    "vt_sampler_create": (vt_status, [POINTER(POINTER(vt_sampler))]),
    "vt_sampler_destroy": (None, [POINTER(vt_sampler)]),
    "vt_sampler_add_greedy": (vt_status, [POINTER(vt_sampler)]),
    "vt_sampler_sample": (vt_status, [POINTER(vt_sampler), POINTER(c_float), c_size_t,
                                      POINTER(vt_token)]),
    "vt_sampler_accept": (vt_status, [POINTER(vt_sampler), vt_token]),
}


class VtError(Exception):
    pass


def load_libvt(path):
    """Opens libvt, checks the ABI version, declares every prototype."""
    name = path or SONAME
    try:
        lib = ctypes.CDLL(name)
    except OSError as e:
        hint = "" if path else " (pass --lib PATH or put its directory on LD_LIBRARY_PATH)"
        raise VtError(f"cannot load {name}: {e}{hint}") from None

    def declare(fn_name):
        try:
            fn = getattr(lib, fn_name)
        except AttributeError:
            raise VtError(f"{name} has no symbol {fn_name} (a library older than "
                          f"ABI {ABI_MAJOR}.{ABI_MINOR}, or not libvt)") from None
        fn.restype, fn.argtypes = PROTOTYPES[fn_name]
        return fn

    # The version first: with a foreign major nothing else may be trusted.
    declare("vt_abi_version")
    declare("vt_version")
    v = lib.vt_abi_version()
    major, minor = v >> 16, v & 0xFFFF
    if major != ABI_MAJOR or minor < ABI_MINOR:
        raise VtError(f"{name} (libvt {lib.vt_version().decode()}) has ABI version "
                      f"{major}.{minor}, but this script was written for ABI "
                      f"{ABI_MAJOR}.{ABI_MINOR} and needs major {ABI_MAJOR} with "
                      f"minor >= {ABI_MINOR}")
    for fn_name in PROTOTYPES:
        declare(fn_name)
    return lib


class Vt:
    """The library plus error checking: every vt_status goes through check()."""

    def __init__(self, lib):
        self.lib = lib

    def check(self, status):
        if status != VT_OK:
            msg = self.lib.vt_last_error()
            if not msg:
                msg = self.lib.vt_status_str(status)
            raise VtError(msg.decode("utf-8", "replace"))

    def init_params(self, struct_type, init_name):
        """Defaults from the library; a struct_size it writes that differs
        from ctypes.sizeof means the mirror above is out of date."""
        p = struct_type()
        getattr(self.lib, init_name)(byref(p))
        if p.struct_size != ctypes.sizeof(struct_type):
            raise VtError(f"{struct_type.__name__} layout mismatch: the library writes "
                          f"struct_size {p.struct_size}, this script's mirror is "
                          f"{ctypes.sizeof(struct_type)} bytes")
        return p

    def tokenize(self, tok, text):
        data = text.encode("utf-8")
        flags = VT_TOKENIZE_ADD_SPECIAL | VT_TOKENIZE_PARSE_SPECIAL
        n = c_size_t(0)
        cap = len(data) + 16
        buf = (vt_token * cap)()
        s = self.lib.vt_tokenize(tok, data, len(data), flags, buf, cap, byref(n))
        if s == VT_ERR_BUFFER_TOO_SMALL:
            cap = n.value
            buf = (vt_token * cap)()
            s = self.lib.vt_tokenize(tok, data, len(data), flags, buf, cap, byref(n))
        self.check(s)
        return buf, n.value

    def piece(self, tok, token, buf):
        needed = c_size_t(0)
        s = self.lib.vt_token_to_piece(tok, token, False, buf, len(buf), byref(needed))
        if s == VT_ERR_BUFFER_TOO_SMALL:
            buf = ctypes.create_string_buffer(needed.value + 1)
            s = self.lib.vt_token_to_piece(tok, token, False, buf, len(buf), byref(needed))
        self.check(s)
        return buf.raw[:needed.value], buf


def generate(vt, model_path, prompt, n_predict, threads, out):
    lib = vt.lib
    model = POINTER(vt_model)()
    ctx = POINTER(vt_context)()
    seq = POINTER(vt_seq)()
    smpl = POINTER(vt_sampler)()
    try:
        mp = vt.init_params(vt_model_params, "vt_model_params_init")
        vt.check(lib.vt_model_load(model_path.encode(), byref(mp), byref(model)))
        tok = POINTER(vt_tokenizer)()
        vt.check(lib.vt_model_tokenizer(model, byref(tok)))
        tokens, n_prompt = vt.tokenize(tok, prompt)
        if n_prompt == 0:
            raise VtError("the prompt is empty (no tokens to evaluate)")

        cp = vt.init_params(vt_context_params, "vt_context_params_init")
        cp.n_threads = threads
        vt.check(lib.vt_context_create(model, byref(cp), byref(ctx)))
        sp = vt.init_params(vt_seq_params, "vt_seq_params_init")
        vt.check(lib.vt_seq_create(ctx, byref(sp), byref(seq)))
        vt.check(lib.vt_sampler_create(byref(smpl)))
        vt.check(lib.vt_sampler_add_greedy(smpl))

        vt.check(lib.vt_seq_feed(seq, tokens, n_prompt))
        vt.check(lib.vt_seq_step(seq))
        logits = POINTER(c_float)()
        n_vocab = c_size_t(0)
        t = vt_token(VT_TOKEN_NULL)
        buf = ctypes.create_string_buffer(64)
        n_gen = 0
        while n_gen < n_predict:
            vt.check(lib.vt_seq_logits(seq, -1, byref(logits), byref(n_vocab)))
            vt.check(lib.vt_sampler_sample(smpl, logits, n_vocab.value, byref(t)))
            if lib.vt_token_is_eog(tok, t.value):
                break
            n_gen += 1
            vt.check(lib.vt_sampler_accept(smpl, t.value))
            piece, buf = vt.piece(tok, t.value, buf)
            out.write(piece)  # bytes: a piece may split a UTF-8 character
            out.flush()
            if n_gen >= n_predict:
                break
            s = lib.vt_seq_feed(seq, byref(t), 1)
            if s == VT_ERR_CONTEXT_FULL:
                print("vt_ctypes: stopped early: the context is full", file=sys.stderr)
                break
            vt.check(s)
            vt.check(lib.vt_seq_step(seq))
        print(f"vt_ctypes: prompt {n_prompt} tokens, generated {n_gen} tokens",
              file=sys.stderr)
    finally:
        # Reverse order of creation; every destroy accepts NULL.
        lib.vt_sampler_destroy(smpl)
        lib.vt_seq_destroy(seq)
        lib.vt_context_destroy(ctx)
        lib.vt_model_destroy(model)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="vt_ctypes.py",
                                 description="greedy completion through libvt via ctypes")
    ap.add_argument("--lib", help=f"libvt to load (default: {SONAME} by name)")
    ap.add_argument("-m", "--model", required=True, help="GGUF model file")
    ap.add_argument("-p", "--prompt", required=True, help="prompt text")
    ap.add_argument("-n", type=int, default=32, help="tokens to generate (default 32)")
    ap.add_argument("-t", type=int, default=0, help="compute threads, 0 = physical cores")
    a = ap.parse_args(argv)
    if a.n < 0 or a.t < 0:
        ap.error("-n and -t must be >= 0")
    try:
        lib = load_libvt(a.lib)
        v = lib.vt_abi_version()
        print(f"vt_ctypes: loaded {a.lib or SONAME}: libvt {lib.vt_version().decode()}, "
              f"ABI {v >> 16}.{v & 0xFFFF} (written for {ABI_MAJOR}.{ABI_MINOR})",
              file=sys.stderr)
        generate(Vt(lib), a.model, a.prompt, a.n, a.t, sys.stdout.buffer)
    except VtError as e:
        print(f"vt_ctypes: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

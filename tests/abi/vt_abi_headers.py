"""The public ABI as the headers declare it: shared by the ABI check scripts.

declared(headers_dir) returns the names of every function declared with
VT_API in include/vt/*.h (comments and preprocessor lines stripped first, so
the #define of VT_API itself and commented-out prototypes do not count).
Used by check-exports.py (what libvt exports) and check-python-symbols.py
(what the Python extension imports). Standard library only.
"""
import pathlib
import re

# The name may be parenthesised, as `VT_API void(vt_x_params_init)(...)`
# declares a function that a function-like macro of the same name shadows.
DECL = re.compile(r"\bVT_API\b([^;{]*?)\(?\b(vt_\w+)\)?\s*\(", re.S)


def strip_comments_and_directives(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)  # comments
    text = re.sub(r"//[^\n]*", " ", text)
    # Preprocessor lines (the #define of VT_API itself), with continuations.
    return re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", " ", text, flags=re.M)


def declared(headers) -> set:
    """Names of the VT_API functions of every *.h under `headers`."""
    names = set()
    for h in sorted(pathlib.Path(headers).glob("*.h")):
        text = strip_comments_and_directives(h.read_text(encoding="utf-8"))
        for m in DECL.finditer(text):
            names.add(m.group(2))
    return names

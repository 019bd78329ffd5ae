// Writes the tiny random-weight Llama of tests/common/gguf-writer.h to a
// file, for tests that cannot build a GGUF themselves (test-vt-generate.py).
//
//   write-tiny-model OUT.gguf [--arch NAME]
//
// --arch writes the same file under another general.architecture (and
// hparam key prefix), e.g. an unsupported one. Exit status 0 or 1.
#include <cstdio>
#include <cstring>
#include <string>

#include "common/gguf-writer.h"

int main(int argc, char **argv) {
    vt::test::TinyLlama o;
    const char *out = nullptr;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--arch") == 0 && i + 1 < argc) {
            o.arch = argv[++i];
        } else if (!out && argv[i][0] != '-') {
            out = argv[i];
        } else {
            std::fprintf(stderr, "usage: write-tiny-model OUT.gguf [--arch NAME]\n");
            return 1;
        }
    }
    if (!out) {
        std::fprintf(stderr, "usage: write-tiny-model OUT.gguf [--arch NAME]\n");
        return 1;
    }
    if (!vt::test::write_file(out, vt::test::tiny_llama_gguf(o))) {
        std::fprintf(stderr, "write-tiny-model: cannot write %s\n", out);
        return 1;
    }
    return 0;
}

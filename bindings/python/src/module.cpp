// vt._vt: the extension module behind `import vt`. Only calls the areas'
// init functions; each area lives in its own file (vt_py.h).
#include "vt_py.h"

PYBIND11_MODULE(_vt, m) {
    m.doc() = "vt._vt: the C++ extension behind the vt package (use `import vt`).";
    vt_py::init_errors(m);
    vt_py::init_model(m);
    vt_py::init_lora(m);
    vt_py::init_tokenizer(m);
    vt_py::init_context(m);
    vt_py::init_grammar(m);  // before init_sampler: Sampler.add_grammar names vt.Grammar
    vt_py::init_sampler(m);
    vt_py::init_engine(m);  // adds to Context; its signatures name Sampler
    vt_py::init_llm(m);
    vt_py::init_chat(m);
}

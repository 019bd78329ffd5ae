// Precompiled header of the Python extension: pybind11 is most of each
// translation unit's compile time, so it is parsed once for all of them.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

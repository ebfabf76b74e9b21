#include "python/call_key.h"

#include <torch/csrc/autograd/python_variable.h>

#include <vector>

namespace parir {
namespace {

// The exact types whose instances call_key encodes (subclasses that behave differently, such
// as FakeTensor, are not registered).
std::vector<PyTypeObject*> key_tensor_types;

bool is_key_tensor(PyObject* o) {
  PyTypeObject* t = Py_TYPE(o);
  for (PyTypeObject* k : key_tensor_types)
    if (t == k) return true;
  return false;
}

// Appends argument `o`'s encoding, a tag then fixed-width fields (so that no two argument
// lists share an encoding); false for an argument call_key does not encode.
bool encode_argument(PyObject* o, std::string& out) {
  if (o == Py_None) {
    out.push_back('n');
    return true;
  }
  if (PyBool_Check(o)) {
    out.push_back('b');
    out.push_back(o == Py_True ? 1 : 0);
    return true;
  }
  if (PyLong_CheckExact(o)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) return false;  // the converting path reports it
    out.push_back('i');
    put_bytes<int64_t>(out, v);
    return true;
  }
  if (PyFloat_CheckExact(o)) {
    out.push_back('f');
    put_bytes<double>(out, PyFloat_AS_DOUBLE(o));
    return true;
  }
  if (!is_key_tensor(o)) return false;
  const at::Tensor& t = THPVariable_Unpack(o);
  // A negated view (its memory holds the negations) goes the long way, which rejects it.
  if (!t.defined() || t.layout() != at::kStrided || t.is_nested() || t.dim() == 0 || t.is_neg())
    return false;
  out.push_back('t');
  out.push_back(static_cast<char>(t.scalar_type()));
  out.push_back(static_cast<char>(t.device().type()));
  out.push_back(static_cast<char>(t.device().index()));
  put_bytes<int64_t>(out, t.dim());
  for (int64_t s : t.sizes()) put_bytes<int64_t>(out, s);
  for (int64_t s : t.strides()) put_bytes<int64_t>(out, s);
  return true;
}

}  // namespace

bool encode_arguments(PyObject* args, std::string& out) {
  if (!PyTuple_Check(args)) return false;
  const Py_ssize_t n = PyTuple_GET_SIZE(args);
  put_bytes<int64_t>(out, n);
  for (Py_ssize_t i = 0; i < n; ++i)
    if (!encode_argument(PyTuple_GET_ITEM(args, i), out)) return false;
  return true;
}

namespace {

PyObject* call_key(PyObject*, PyObject* args) {
  std::string out;
  if (!encode_arguments(args, out)) Py_RETURN_NONE;
  return PyBytes_FromStringAndSize(out.data(), static_cast<Py_ssize_t>(out.size()));
}

// A plain METH_O function: call_key runs on every cached call, where pybind11's argument
// dispatch would cost more than the key itself.
PyMethodDef call_key_def = {"call_key", call_key, METH_O,
                            "call_key(args) -> bytes | None: the specialization key of a "
                            "call's arguments (see csrc/python/call_key.h)"};

}  // namespace

void add_call_key(pybind11::module& m) {
  m.add_object("call_key",
               pybind11::reinterpret_steal<pybind11::object>(
                   PyCFunction_NewEx(&call_key_def, nullptr, m.attr("__name__").ptr())));
  m.def("register_key_tensor_type", [](pybind11::type t) {
    auto* type = reinterpret_cast<PyTypeObject*>(t.ptr());
    for (PyTypeObject* k : key_tensor_types)
      if (k == type) return;
    Py_INCREF(t.ptr());  // kept for the life of the process
    key_tensor_types.push_back(type);
  });
}

}  // namespace parir

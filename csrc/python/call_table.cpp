#include "python/call_table.h"

#include <string>
#include <unordered_map>
#include <vector>

#include "python/bound_launch.h"
#include "python/call_key.h"

namespace parir {
namespace {

namespace py = pybind11;

struct Table {
  py::object default_options;
  std::vector<py::object> key_fields, off_fields;  // interned names
  py::object loop_par_type;
  py::object k_name = py::reinterpret_steal<py::object>(PyUnicode_InternFromString("_k"));
  py::object launch_name =
      py::reinterpret_steal<py::object>(PyUnicode_InternFromString("launch"));
  std::unordered_map<std::string, py::object> entries;  // key -> compiled
};

// Appends the encoding of an option value: a tag, then the value; false for a value of a kind
// not encoded (the call then takes the slow path).
bool encode_value(const Table& t, PyObject* v, std::string& out) {
  if (v == Py_None) {
    out.push_back('n');
    return true;
  }
  if (PyBool_Check(v)) {
    out.push_back(v == Py_True ? 'T' : 'F');
    return true;
  }
  if (PyLong_CheckExact(v)) {
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow) return false;
    out.push_back('i');
    put_bytes<int64_t>(out, x);
    return true;
  }
  if (PyUnicode_CheckExact(v)) {
    Py_ssize_t n = 0;
    const char* s = PyUnicode_AsUTF8AndSize(v, &n);
    if (!s) {
      PyErr_Clear();
      return false;
    }
    out.push_back('s');
    put_bytes<int64_t>(out, n);
    out.append(s, static_cast<size_t>(n));
    return true;
  }
  if (PyList_CheckExact(v) || PyTuple_CheckExact(v)) {
    const bool list = PyList_CheckExact(v);
    const Py_ssize_t n = list ? PyList_GET_SIZE(v) : PyTuple_GET_SIZE(v);
    out.push_back(list ? 'l' : 'u');
    put_bytes<int64_t>(out, n);
    for (Py_ssize_t i = 0; i < n; ++i)
      if (!encode_value(t, list ? PyList_GET_ITEM(v, i) : PyTuple_GET_ITEM(v, i), out))
        return false;
    return true;
  }
  if (PyDict_CheckExact(v)) {
    out.push_back('d');
    put_bytes<int64_t>(out, PyDict_GET_SIZE(v));
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(v, &pos, &key, &value))  // insertion order, as options_key reads it
      if (!encode_value(t, key, out) || !encode_value(t, value, out)) return false;
    return true;
  }
  if (Py_TYPE(v) == reinterpret_cast<PyTypeObject*>(t.loop_par_type.ptr())) {
    // A LoopPar by its key tuple, as options_key takes it.
    PyObject* k = PyObject_GetAttr(v, t.k_name.ptr());
    if (!k) {
      PyErr_Clear();
      return false;
    }
    out.push_back('p');
    bool ok = encode_value(t, k, out);
    Py_DECREF(k);
    return ok;
  }
  return false;
}

// Whether an option that sends the call elsewhere (seq, check) is off; an error reading it
// counts as on (the slow path reports it).
bool option_off(PyObject* v) {
  if (!v || v == Py_False || v == Py_None) return true;
  int truth = PyObject_IsTrue(v);
  if (truth < 0) PyErr_Clear();
  return truth == 0;
}

// Appends the options' key fields, in the table's order, from the options' instance dict. One
// walk over the dict when it holds them in that order under the interned names the table holds,
// as CompileOptions.__init__ leaves it (a dict lookup per field costs several times more);
// else a lookup per field.
bool encode_options(const Table& t, PyObject* dict, std::string& out) {
  const size_t start = out.size();
  size_t next = 0, offs = 0;
  Py_ssize_t pos = 0;
  PyObject *name, *value;
  while (PyDict_Next(dict, &pos, &name, &value)) {
    if (next < t.key_fields.size() && name == t.key_fields[next].ptr()) {
      if (!encode_value(t, value, out)) return false;
      ++next;
      continue;
    }
    for (const auto& f : t.off_fields) {
      if (name != f.ptr()) continue;
      if (!option_off(value)) return false;
      ++offs;
    }
  }
  if (next == t.key_fields.size() && offs == t.off_fields.size()) return true;
  out.resize(start);
  for (const auto& f : t.off_fields)
    if (!option_off(PyDict_GetItemWithError(dict, f.ptr()))) return false;
  for (const auto& f : t.key_fields) {
    PyObject* v = PyDict_GetItemWithError(dict, f.ptr());
    if (!v || !encode_value(t, v, out)) return false;
  }
  return true;
}

// The key of a call: the options' fields, then call_key's encoding of the arguments. False
// when the call cannot be in the table.
bool encode_call(const Table& t, PyObject* opts, PyObject* args, std::string& out) {
  if (opts == Py_None) opts = t.default_options.ptr();
  PyObject* dict = PyObject_GenericGetDict(opts, nullptr);
  if (!dict) {
    PyErr_Clear();
    return false;
  }
  const bool ok = encode_options(t, dict, out);
  Py_DECREF(dict);
  if (PyErr_Occurred()) PyErr_Clear();
  return ok && encode_arguments(args, out);
}

// The key buffer of the calls on this thread, reused. A launch may run Python (a log handler)
// that calls another jit function, so the buffer is only used before the launch.
std::string& key_buffer() {
  thread_local std::string key;
  key.clear();
  return key;
}

PyObject* lookup(const Table& t, PyObject* opts, PyObject* args) {
  std::string& key = key_buffer();
  if (!encode_call(t, opts, args, key)) return nullptr;
  auto it = t.entries.find(key);
  return it == t.entries.end() ? nullptr : it->second.ptr();
}

// A plain CPython type, not a pybind11 class: launch() runs on every cached call, where
// pybind11's dispatch and casts would cost more than the rest of it.
struct CallTableObject {
  PyObject_HEAD
  Table* table;  // owned
};

PyTypeObject call_table_type = {PyVarObject_HEAD_INIT(nullptr, 0)};

const Table& table_of(PyObject* self) { return *reinterpret_cast<CallTableObject*>(self)->table; }

bool two_arguments(const char* what, Py_ssize_t nargs, Py_ssize_t want) {
  if (nargs == want) return true;
  PyErr_Format(PyExc_TypeError, "CallTable.%s takes %zd arguments, got %zd", what, want, nargs);
  return false;
}

PyObject* launch(PyObject* self, PyObject* const* argv, Py_ssize_t nargs) {
  if (!two_arguments("launch", nargs, 2)) return nullptr;
  const Table& t = table_of(self);
  PyObject* compiled = lookup(t, argv[0], argv[1]);
  if (!compiled) Py_RETURN_FALSE;
  Py_INCREF(compiled);  // the launch may run Python that empties the table
  PyObject* launcher = PyObject_GetAttr(compiled, t.launch_name.ptr());
  Py_DECREF(compiled);
  if (!launcher) return nullptr;
  int launched = launch_cached_call(launcher, argv[1]);
  if (launched == 0) {
    PyObject* result = PyObject_CallOneArg(launcher, argv[1]);
    launched = result ? 1 : -1;
    Py_XDECREF(result);
  }
  Py_DECREF(launcher);
  if (launched < 0) return nullptr;
  Py_RETURN_TRUE;
}

PyObject* add(PyObject* self, PyObject* const* argv, Py_ssize_t nargs) {
  if (!two_arguments("add", nargs, 3)) return nullptr;
  Table& t = *reinterpret_cast<CallTableObject*>(self)->table;
  std::string key;
  if (!encode_call(t, argv[0], argv[1], key)) Py_RETURN_FALSE;
  t.entries[key] = py::reinterpret_borrow<py::object>(argv[2]);
  Py_RETURN_TRUE;
}

PyObject* find(PyObject* self, PyObject* const* argv, Py_ssize_t nargs) {
  if (!two_arguments("find", nargs, 2)) return nullptr;
  PyObject* c = lookup(table_of(self), argv[0], argv[1]);
  if (!c) Py_RETURN_NONE;
  Py_INCREF(c);
  return c;
}

PyObject* clear(PyObject* self, PyObject*) {
  // Moved out first: dropping the entries may run Python (finalizers) that uses the table.
  auto dropped = std::move(reinterpret_cast<CallTableObject*>(self)->table->entries);
  reinterpret_cast<CallTableObject*>(self)->table->entries.clear();
  dropped.clear();
  Py_RETURN_NONE;
}

Py_ssize_t length(PyObject* self) { return static_cast<Py_ssize_t>(table_of(self).entries.size()); }

void dealloc(PyObject* self) {
  delete reinterpret_cast<CallTableObject*>(self)->table;
  Py_TYPE(self)->tp_free(self);
}

PyMethodDef methods[] = {
    {"launch", reinterpret_cast<PyCFunction>(reinterpret_cast<void*>(launch)), METH_FASTCALL,
     "launch(opts, args) -> bool: launches the call's specialization if the table has it"},
    {"add", reinterpret_cast<PyCFunction>(reinterpret_cast<void*>(add)), METH_FASTCALL,
     "add(opts, args, compiled) -> bool: records compiled for calls like this one"},
    {"find", reinterpret_cast<PyCFunction>(reinterpret_cast<void*>(find)), METH_FASTCALL,
     "find(opts, args) -> compiled | None"},
    {"clear", clear, METH_NOARGS, "clear(): forgets every entry"},
    {nullptr, nullptr, 0, nullptr}};

PySequenceMethods sequence_methods = {length};

py::object new_call_table(py::object default_options, const std::vector<std::string>& key_fields,
                          const std::vector<std::string>& off_fields, py::object loop_par_type) {
  PyObject* obj = call_table_type.tp_alloc(&call_table_type, 0);
  if (!obj) throw py::error_already_set();
  auto t = std::make_unique<Table>();
  t->default_options = std::move(default_options);
  auto intern = [](const std::string& s) {
    return py::reinterpret_steal<py::object>(PyUnicode_InternFromString(s.c_str()));
  };
  for (const auto& f : key_fields) t->key_fields.push_back(intern(f));
  for (const auto& f : off_fields) t->off_fields.push_back(intern(f));
  t->loop_par_type = std::move(loop_par_type);
  reinterpret_cast<CallTableObject*>(obj)->table = t.release();
  return py::reinterpret_steal<py::object>(obj);
}

}  // namespace

void add_call_table(py::module& m) {
  PyTypeObject& t = call_table_type;
  t.tp_name = "parir_torch._C.CallTable";
  t.tp_basicsize = sizeof(CallTableObject);
  t.tp_dealloc = dealloc;
  t.tp_flags = Py_TPFLAGS_DEFAULT;
  t.tp_doc = "A jit function's cached calls by (options, arguments) (call_table.h)";
  t.tp_methods = methods;
  t.tp_as_sequence = &sequence_methods;
  if (PyType_Ready(&t) < 0) throw py::error_already_set();
  m.def("CallTable", &new_call_table, py::arg("default_options"), py::arg("key_fields"),
        py::arg("off_fields"), py::arg("loop_par_type"),
        "A new CallTable (csrc/python/call_table.h).");
}

}  // namespace parir

#include "python/bound_launch.h"

#include <torch/csrc/autograd/python_variable.h>

#include <c10/util/SmallVector.h>

#include <limits>

#include "ir/error.h"
#include "runtime/op.h"

namespace parir {
namespace {

// Counts launches; callers hold the GIL.
uint64_t launch_clock = 0;

PyObject* parir_error_type = nullptr;  // parir_torch.ParirError

struct Binding {
  std::shared_ptr<runtime::Program> program;
  std::vector<int> outs, ins;
  std::vector<int> params;  // the argument of each of the plan's parameters, in the plan's order
  uint64_t last_used = 0;
};

// Standard layout (the C++ state lives behind a pointer), so that offsetof is well defined.
struct BoundLaunchObject {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  Binding* binding;  // owned
};

PyTypeObject bound_launch_type = {PyVarObject_HEAD_INIT(nullptr, 0)};

// Sets the Python error for the exception in flight: ParirError for parir's own errors (they
// name the user's function and argument), RuntimeError for torch's and the rest.
void set_python_error() {
  try {
    throw;
  } catch (const pybind11::error_already_set& e) {
    // A Python error raised underneath (a caster's TypeError): restored as it was.
    const_cast<pybind11::error_already_set&>(e).restore();
  } catch (const Error& e) {
    PyErr_SetString(parir_error_type, e.what());
  } catch (const c10::Error& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what_without_backtrace());
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "parir: unknown C++ exception while launching");
  }
}

// The tensors at `positions` of the argument tuple, appended to `out`; false (with a Python
// error set) when the tuple is too short.
bool pick(PyObject* args, const std::vector<int>& positions,
          c10::SmallVector<at::Tensor, 16>& out) {
  const Py_ssize_t n = PyTuple_GET_SIZE(args);
  for (int i : positions) {
    if (i >= n) {
      PyErr_SetString(PyExc_IndexError,
                      "BoundLaunch: fewer arguments than the program's tensors");
      return false;
    }
    PyObject* a = PyTuple_GET_ITEM(args, i);
    // Tensors straight from the Python object; anything else through pybind11's caster,
    // which names what it got.
    out.push_back(THPVariable_Check(a) ? THPVariable_Unpack(a)
                                       : pybind11::handle(a).cast<at::Tensor>());
  }
  return true;
}

PyObject* call(PyObject* self_obj, PyObject* const* argv, size_t nargsf, PyObject* kwnames) {
  Binding& self = *reinterpret_cast<BoundLaunchObject*>(self_obj)->binding;
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (nargs != 1 || (kwnames && PyTuple_GET_SIZE(kwnames) > 0) || !PyTuple_Check(argv[0])) {
    PyErr_SetString(PyExc_TypeError, "BoundLaunch takes one argument: the call's argument tuple");
    return nullptr;
  }
  try {
    c10::SmallVector<at::Tensor, 16> outs, ins;
    if (!pick(argv[0], self.outs, outs) || !pick(argv[0], self.ins, ins)) return nullptr;
    self.last_used = ++launch_clock;
    runtime::launch_eager(*self.program, outs, ins);
  } catch (...) {
    set_python_error();
    return nullptr;
  }
  Py_RETURN_NONE;
}

void dealloc(PyObject* self_obj) {
  delete reinterpret_cast<BoundLaunchObject*>(self_obj)->binding;
  Py_TYPE(self_obj)->tp_free(self_obj);
}

PyObject* get_last_used(PyObject* self_obj, void*) {
  return PyLong_FromUnsignedLongLong(reinterpret_cast<BoundLaunchObject*>(self_obj)->binding->last_used);
}

PyGetSetDef getset[] = {
    {"last_used", get_last_used, nullptr,
     "A counter value that grows with every launch: larger is more recent.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

}  // namespace

void add_bound_launch(pybind11::module& m, PyObject* parir_error) {
  parir_error_type = parir_error;
  PyTypeObject& t = bound_launch_type;
  t.tp_name = "parir_torch._C.BoundLaunch";
  t.tp_basicsize = sizeof(BoundLaunchObject);
  t.tp_dealloc = dealloc;
  t.tp_vectorcall_offset = offsetof(BoundLaunchObject, vectorcall);
  t.tp_call = PyVectorcall_Call;
  t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL;
  t.tp_doc = "launcher(args): launches a program on the tensors of a call's argument tuple";
  t.tp_getset = getset;
  if (PyType_Ready(&t) < 0) throw pybind11::error_already_set();
  Py_INCREF(&t);
  m.add_object("BoundLaunch", pybind11::reinterpret_borrow<pybind11::object>(
                                  reinterpret_cast<PyObject*>(&t)));
}

pybind11::object bind_launch(std::shared_ptr<runtime::Program> program, std::vector<int> outs,
                             std::vector<int> ins) {
  PyObject* obj = bound_launch_type.tp_alloc(&bound_launch_type, 0);
  if (!obj) throw pybind11::error_already_set();
  auto* self = reinterpret_cast<BoundLaunchObject*>(obj);
  self->vectorcall = call;
  std::vector<int> params;
  size_t next_out = 0, next_in = 0;
  for (const auto& p : program->plan().params) {
    const std::vector<int>& from = p.written ? outs : ins;
    size_t& next = p.written ? next_out : next_in;
    // A launcher with fewer positions than parameters never launches a cached call (the plan's
    // launch reports the error).
    params.push_back(next < from.size() ? from[next++] : std::numeric_limits<int>::max());
  }
  self->binding =
      new Binding{std::move(program), std::move(outs), std::move(ins), std::move(params)};
  return pybind11::reinterpret_steal<pybind11::object>(obj);
}

uint64_t next_launch_stamp() { return ++launch_clock; }

int launch_cached_call(PyObject* launcher, PyObject* args) {
  if (Py_TYPE(launcher) != &bound_launch_type || !PyTuple_Check(args)) return 0;
  Binding& self = *reinterpret_cast<BoundLaunchObject*>(launcher)->binding;
  const Py_ssize_t n = PyTuple_GET_SIZE(args);
  // Borrowed from the tuple, which holds them until the launch returns.
  c10::SmallVector<const at::Tensor*, 16> tensors;
  for (int i : self.params) {
    if (i >= n) return 0;
    PyObject* a = PyTuple_GET_ITEM(args, i);
    if (!THPVariable_Check(a)) return 0;
    tensors.push_back(&THPVariable_Unpack(a));
  }
  try {
    if (!runtime::launch_matched(*self.program, tensors)) return 0;
  } catch (...) {
    set_python_error();
    return -1;
  }
  self.last_used = ++launch_clock;
  return 1;
}

}  // namespace parir

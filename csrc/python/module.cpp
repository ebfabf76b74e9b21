// parir_torch._C: the Python bindings of the compiler and the runtime.
#include <torch/extension.h>

#include "codegen/prelude.h"
#include "frontend/python_ast.h"
#include "passes/pipeline.h"
#include "passes/queries.h"
#include "runtime/disk_cache.h"
#include "runtime/driver.h"
#include "runtime/launch.h"
#include "runtime/nvrtc.h"
#include "runtime/op.h"
#include "runtime/program.h"

namespace py = pybind11;

namespace parir {
namespace {

// ("int", v) | ("float", v) | ("bool", v) | ("tensor", dtype_name, shape, strides)
ArgValue to_arg(const py::handle& h) {
  py::tuple t = py::reinterpret_borrow<py::tuple>(h);
  std::string kind = t[0].cast<std::string>();
  ArgValue a;
  if (kind == "int") {
    a.kind = ArgValue::Kind::Int;
    a.int_value = t[1].cast<int64_t>();
  } else if (kind == "float") {
    a.kind = ArgValue::Kind::Float;
    a.float_value = t[1].cast<double>();
  } else if (kind == "bool") {
    a.kind = ArgValue::Kind::Bool;
    a.bool_value = t[1].cast<bool>();
  } else if (kind == "tensor") {
    a.kind = ArgValue::Kind::Tensor;
    auto elem = scalar_type_from_name(t[1].cast<std::string>());
    if (!elem) fail("unsupported element type {}", t[1].cast<std::string>());
    a.tensor.elem = *elem;
    a.tensor.shape = t[2].cast<std::vector<int64_t>>();
    a.tensor.strides = t[3].cast<std::vector<int64_t>>();
  } else {
    fail("internal: unknown argument kind {}", kind);
  }
  return a;
}

// Counts launches through BoundLaunch; callers hold the GIL.
uint64_t launch_clock = 0;

// The eager call path: a program with the positions of its tensors among the call's
// arguments, so that a call passes its argument tuple as it is and Python builds nothing.
struct BoundLaunch {
  std::shared_ptr<runtime::Program> program;
  std::vector<int> outs, ins;
  uint64_t last_used = 0;  // launch_clock at the latest launch: recency for cache eviction

  void operator()(const py::tuple& args) {
    auto pick = [&](const std::vector<int>& idx) {
      std::vector<at::Tensor> ts;
      ts.reserve(idx.size());
      for (int i : idx) ts.push_back(args[i].cast<at::Tensor>());
      return ts;
    };
    last_used = ++launch_clock;
    runtime::launch_eager(*program, pick(outs), pick(ins));
  }
};

// {label: (threads, reduce, tpb)}
ParallelSpec to_spec(const py::dict& d) {
  ParallelSpec spec;
  for (const auto& [k, v] : d) {
    py::tuple t = py::reinterpret_borrow<py::tuple>(v);
    spec[k.cast<std::string>()] =
        LoopPar{t[0].cast<int64_t>(), t[1].cast<bool>(), t[2].cast<int64_t>()};
  }
  return spec;
}

}  // namespace
}  // namespace parir

PYBIND11_MODULE(_C, m) {
  using namespace parir;
  m.doc() = "parir-torch compiler core and runtime";

  // parir::Error -> parir_torch.ParirError, a subclass of RuntimeError.
  py::register_exception<Error>(m, "ParirError", PyExc_RuntimeError);

  py::class_<Function, std::shared_ptr<Function>>(m, "Function")
      .def_property_readonly("name", [](const Function& f) { return f.name; })
      .def_property_readonly("params", [](const Function& f) {
        std::vector<std::string> names;
        for (const auto& p : f.params) names.push_back(p.name);
        return names;
      })
      .def_property_readonly(
          "written_params",
          [](const Function& f) {
            std::set<std::string> stored = stored_tensors(f.body);
            std::vector<std::string> names;
            for (const auto& p : f.params)
              if (stored.count(p.name)) names.push_back(p.name);
            return names;
          },
          "The parameters that some assignment stores to, in parameter order.")
      .def("__str__", [](const Function& f) { return to_string(f); });

  m.def(
      "convert_function",
      [](py::handle def, std::string filename, int first_line, std::vector<std::string> lines,
         std::map<std::string, std::string> aliases) {
        auto src = std::make_shared<SourceInfo>();
        src->filename = std::move(filename);
        src->first_line = first_line;
        src->lines = std::move(lines);
        return std::make_shared<Function>(frontend::convert_function(def, src, aliases));
      },
      "Converts an ast.FunctionDef to the compiler's untyped IR.");

  m.def(
      "compile",
      [](const Function& fn, py::list args, py::dict spec, bool debug, bool cuda_graphs,
         bool clusters, int64_t max_blocks_per_cluster) {
        std::vector<ArgValue> values;
        for (const auto& a : args) values.push_back(to_arg(a));
        CompileOptions opts;
        opts.parallelize = to_spec(spec);
        opts.debug_print = debug;
        opts.use_cuda_graphs = cuda_graphs;
        opts.use_clusters = clusters;
        opts.max_blocks_per_cluster = max_blocks_per_cluster;
        CompileResult r;
        {
          py::gil_scoped_release release;
          r = compile(fn, values, opts);
        }
        return py::make_tuple(r.cuda, r.debug_log);
      },
      py::arg("fn"), py::arg("args"), py::arg("spec"), py::arg("debug") = false,
      py::arg("cuda_graphs") = false, py::arg("clusters") = false,
      py::arg("max_blocks_per_cluster") = 8,
      "Specializes fn to the arguments and returns (CUDA source with launch plan, debug log).");

  py::class_<BoundLaunch>(m, "BoundLaunch")
      .def("__call__", &BoundLaunch::operator(), py::arg("args"))
      .def_readonly("last_used", &BoundLaunch::last_used,
                    "A counter value that grows with every launch: larger is more recent.");

  py::class_<runtime::Program, std::shared_ptr<runtime::Program>>(m, "Program")
      .def(py::init([](std::string source, std::vector<std::string> includes,
                       std::vector<std::string> flags) {
             runtime::NvrtcOptions o;
             o.include_dirs = std::move(includes);
             o.extra_flags = std::move(flags);
             return std::make_shared<runtime::Program>(std::move(source), std::move(o));
           }),
           py::arg("source"), py::arg("include_dirs") = std::vector<std::string>{},
           py::arg("extra_flags") = std::vector<std::string>{})
      .def_property_readonly("source", &runtime::Program::source)
      .def_property_readonly("function", [](const runtime::Program& p) { return p.plan().function; })
      .def_property_readonly("params",
                             [](const runtime::Program& p) {
                               std::vector<std::pair<std::string, bool>> out;
                               for (const auto& q : p.plan().params) out.emplace_back(q.name, q.written);
                               return out;
                             })
      .def("launch", &runtime::launch_eager, py::arg("outs"), py::arg("ins"),
           "Runs the program on the tensors (written ones first), on the current stream.")
      .def(
          "bind",
          [](std::shared_ptr<runtime::Program> p, std::vector<int> outs, std::vector<int> ins) {
            return BoundLaunch{std::move(p), std::move(outs), std::move(ins)};
          },
          py::arg("outs"), py::arg("ins"),
          "A launcher for calls whose arguments at positions `outs` are the written tensors and "
          "at `ins` the read ones.")
      .def("prepare", &runtime::prepare_on_current_stream, py::arg("device"),
           py::call_guard<py::gil_scoped_release>(),
           "Compiles and loads the kernels for `device` now (not during a stream capture).");

  m.def(
      "prepare_source",
      [](const std::string& source, int device) {
        runtime::prepare_on_current_stream(*runtime::program_for_source(source), device);
      },
      py::arg("source"), py::arg("device"), py::call_guard<py::gil_scoped_release>(),
      "Compiles and loads, for `device`, the program that parir::launch runs for this source.");

  m.def(
      "nvrtc_compile",
      [](const std::string& source, const std::string& arch, bool use_cache) {
        runtime::NvrtcOutput out;
        {
          py::gil_scoped_release release;
          out = use_cache ? runtime::compile_cached(source, arch) : [&] {
            runtime::NvrtcOptions o;
            o.arch = arch;
            o.headers.emplace_back(kPreludeName, kPrelude);
            return runtime::compile_cuda(source, "parir_kernels.cu", o);
          }();
        }
        return py::make_tuple(py::bytes(out.binary), out.is_cubin, out.log);
      },
      py::arg("source"), py::arg("arch"), py::arg("use_cache") = false,
      "Compiles CUDA source with NVRTC: (binary, is_cubin, log). No GPU needed.");
  m.def("nvrtc_version", &runtime::nvrtc_version);
  m.def("nvrtc_status", &runtime::nvrtc_status);
  m.def("choose_arch", &runtime::choose_arch);
  m.def("set_library_dirs", &runtime::set_library_dirs);
  m.def("driver_status", [] {
    std::string why;
    bool ok = runtime::Driver::available(&why);
    return py::make_tuple(ok, why);
  });
  m.def("loaded_module_count", &runtime::loaded_module_count,
        "How many CUDA modules parir has loaded and not unloaded yet.");
  m.def("cache_root", &runtime::cache_root);
  m.def("clear_disk_cache", &runtime::cache_clear);
  m.attr("prelude") = kPrelude;
}

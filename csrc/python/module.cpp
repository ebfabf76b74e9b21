// parir_torch._C: the Python bindings of the compiler and the runtime.
#include <torch/extension.h>
#include <torch/csrc/autograd/python_variable.h>
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "codegen/prelude.h"
#include "frontend/python_ast.h"
#include "ir/visitor.h"
#include "compiler/pipeline.h"
#include "ir/queries.h"
#include "runtime/disk_cache.h"
#include "runtime/driver.h"
#include "runtime/launch.h"
#include "runtime/log.h"
#include "runtime/nvrtc.h"
#include "runtime/op.h"
#include "runtime/program.h"
#include "python/bound_launch.h"
#include "python/call_key.h"
#include "python/call_table.h"
#include "python/launch_costs.h"

namespace py = pybind11;

namespace parir {
namespace {

ScalarType scalar_type(const std::string& name) {
  auto t = scalar_type_from_name(name);
  if (!t) fail("unsupported element type {}", name);
  return *t;
}

}  // namespace
}  // namespace parir

PYBIND11_MODULE(_C, m) {
  using namespace parir;
  m.doc() = "parir-torch compiler core and runtime";
  add_call_key(m);
  add_call_table(m);
  add_launch_costs(m);

  // parir::Error -> parir_torch.ParirError, a subclass of RuntimeError.
  auto& parir_error = py::register_exception<Error>(m, "ParirError", PyExc_RuntimeError);
  add_bound_launch(m, parir_error.ptr());

  py::class_<ExternFunction, std::shared_ptr<ExternFunction>>(m, "ExternFunction")
      .def(py::init([](std::string name, std::string python_name,
                       std::vector<std::string> params, std::string result, std::string header,
                       std::vector<bool> pointer, int64_t cooperative_threads,
                       int64_t cooperative_tpb) {
             auto f = std::make_shared<ExternFunction>();
             f->name = std::move(name);
             f->python_name = std::move(python_name);
             // "" for a pointer parameter and for no result (void).
             for (const auto& p : params)
               f->params.push_back(p.empty() ? ScalarType::Unknown : scalar_type(p));
             f->result = result.empty() ? ScalarType::Unknown : scalar_type(result);
             f->header = std::move(header);
             f->pointer = std::move(pointer);
             f->cooperative_threads = cooperative_threads;
             f->cooperative_tpb = cooperative_tpb;
             return f;
           }),
           py::arg("name"), py::arg("python_name"), py::arg("params"), py::arg("result"),
           py::arg("header"), py::arg("pointer") = std::vector<bool>{},
           py::arg("cooperative_threads") = 0, py::arg("cooperative_tpb") = 0);

  py::class_<Function, std::shared_ptr<Function>>(m, "Function")
      .def_property_readonly("name", [](const Function& f) { return f.name; })
      .def_property_readonly("called_names",
                             [](const Function& f) { return called_names(f.body); })
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
         std::map<std::string, std::string> aliases, std::map<std::string, py::object> constants) {
        auto src = std::make_shared<SourceInfo>();
        src->filename = std::move(filename);
        src->first_line = first_line;
        // ast line numbers count from the dedented source's first line, lines[0].
        src->def_line = first_line + def.attr("lineno").cast<int>() - 1;
        src->lines = std::move(lines);
        return std::make_shared<Function>(
            frontend::convert_function(def, src, aliases, constants));
      },
      "Converts an ast.FunctionDef to the compiler's untyped IR.");

  // What the compiler specializes on and how it parallelizes: the C++ structs themselves, so
  // that the Python front end fills them field by field (options.py, arguments.py).
  py::class_<LoopPar>(m, "LoopPar")
      .def(py::init([](int64_t threads, bool reduce, int64_t tpb, bool scan) {
             return LoopPar{threads, reduce, tpb, scan};
           }),
           py::arg("threads"), py::arg("reduce"), py::arg("tpb"), py::arg("scan") = false)
      .def_readonly("threads", &LoopPar::threads)
      .def_readonly("reduce", &LoopPar::reduce)
      .def_readonly("scan", &LoopPar::scan)
      .def_readonly("tpb", &LoopPar::tpb);

  auto type_property = [](ScalarType CompileOptions::*field) {
    return py::cpp_function(
        [field](CompileOptions& o, const std::optional<std::string>& name) {
          o.*field = name ? scalar_type(*name) : ScalarType::Unknown;
        });
  };
  py::class_<CompileOptions>(m, "CompileOptions")
      .def(py::init<>())
      .def_readwrite("parallelize", &CompileOptions::parallelize)
      .def_readwrite("debug_print", &CompileOptions::debug_print)
      .def_property(
          "use_cuda_graphs",
          [](const CompileOptions& o) -> py::object {
            if (o.use_cuda_graphs == CudaGraphs::Auto) return py::none();
            return py::bool_(o.use_cuda_graphs == CudaGraphs::On);
          },
          [](CompileOptions& o, const std::optional<bool>& on) {
            o.use_cuda_graphs = !on ? CudaGraphs::Auto : *on ? CudaGraphs::On : CudaGraphs::Off;
          },
          "None (when it pays: plans with host loops), True or False")
      .def_readwrite("bounds_check", &CompileOptions::bounds_check)
      .def_readwrite("persistent_loops", &CompileOptions::persistent_loops)
      .def_readwrite("time_tiling", &CompileOptions::time_tiling)
      .def_readwrite("product_tiling", &CompileOptions::product_tiling)
      .def_readwrite("wide_accesses", &CompileOptions::wide_accesses)
      .def_readwrite("memory_bandwidth_gbps", &CompileOptions::memory_bandwidth_gbps)
      .def_readwrite("half_in_float32", &CompileOptions::half_in_float32)
      .def_readwrite("deterministic", &CompileOptions::deterministic)
      .def_readwrite("use_cuda_thread_block_clusters",
                     &CompileOptions::use_cuda_thread_block_clusters)
      .def_readwrite("max_thread_blocks_per_cluster",
                     &CompileOptions::max_thread_blocks_per_cluster)
      .def_property(
          "force_int_size",
          [](const CompileOptions& o) {
            return o.force_int_size == ScalarType::Unknown ? std::optional<std::string>()
                                                  : python_name(o.force_int_size);
          },
          type_property(&CompileOptions::force_int_size))
      .def_property(
          "force_float_size",
          [](const CompileOptions& o) {
            return o.force_float_size == ScalarType::Unknown ? std::optional<std::string>()
                                                  : python_name(o.force_float_size);
          },
          type_property(&CompileOptions::force_float_size))
      .def_readwrite("includes", &CompileOptions::includes)
      .def_readwrite("extra_flags", &CompileOptions::extra_flags)
      .def_readwrite("link_libraries", &CompileOptions::link_libraries);

  // One argument of a call as the compiler specializes on it; one constructor per kind.
  py::class_<ArgValue>(m, "ArgValue")
      .def_static("int", [](int64_t v) {
        ArgValue a;
        a.kind = ArgValue::Kind::Int;
        a.int_value = v;
        return a;
      })
      .def_static("float", [](double v) {
        ArgValue a;
        a.kind = ArgValue::Kind::Float;
        a.float_value = v;
        return a;
      })
      .def_static("bool", [](bool v) {
        ArgValue a;
        a.kind = ArgValue::Kind::Bool;
        a.bool_value = v;
        return a;
      })
      .def_static("none", [] {
        ArgValue a;
        a.kind = ArgValue::Kind::None;
        return a;
      })
      .def_static(
          "typed_scalar",
          [](const std::string& dtype, py::object v) {
            // A value with a type of its own (a 0-d tensor's, a NumPy scalar's).
            ArgValue a;
            a.scalar_type = scalar_type(dtype);
            if (is_bool(a.scalar_type)) {
              a.kind = ArgValue::Kind::Bool;
              a.bool_value = v.cast<bool>();
            } else if (is_float(a.scalar_type)) {
              a.kind = ArgValue::Kind::Float;
              a.float_value = v.cast<double>();
            } else {
              a.kind = ArgValue::Kind::Int;
              // uint64 values above INT64_MAX keep their bits.
              a.int_value = is_unsigned_int(a.scalar_type)
                                ? static_cast<int64_t>(v.cast<uint64_t>())
                                : v.cast<int64_t>();
            }
            return a;
          },
          py::arg("dtype"), py::arg("value"))
      .def_static(
          "tensor",
          [](const std::string& dtype, std::vector<int64_t> shape, std::vector<int64_t> strides) {
            ArgValue a;
            a.kind = ArgValue::Kind::Tensor;
            a.tensor.elem = scalar_type(dtype);
            a.tensor.shape = std::move(shape);
            a.tensor.strides = std::move(strides);
            return a;
          },
          py::arg("dtype"), py::arg("shape"), py::arg("strides"))
      .def_static(
          "dict",
          [](std::vector<std::string> keys, std::vector<ArgValue> entries) {
            ArgValue a;
            a.kind = ArgValue::Kind::Dict;
            a.entry_keys = std::move(keys);
            a.entries = std::move(entries);
            return a;
          },
          py::arg("keys"), py::arg("entries"));

  m.def(
      "compile",
      [](const Function& fn, const std::vector<ArgValue>& args, const CompileOptions& opts,
         py::list callees) {
        // [(function, {name: Function | ExternFunction})] -> CalleeTable
        CalleeTable table;
        for (const auto& entry : callees) {
          py::tuple t = py::reinterpret_borrow<py::tuple>(entry);
          auto& names = table[t[0].cast<std::shared_ptr<Function>>().get()];
          for (const auto& [name, target] : t[1].cast<py::dict>()) {
            Callee c;
            if (py::isinstance<ExternFunction>(target))
              c.external = target.cast<std::shared_ptr<ExternFunction>>();
            else
              c.function = target.cast<std::shared_ptr<Function>>();
            names[name.cast<std::string>()] = std::move(c);
          }
        }
        CompileResult r;
        {
          py::gil_scoped_release release;
          r = compile(fn, args, opts, table);
        }
        py::dict bounds;
        bounds["accesses"] = r.bounds.accesses;
        bounds["proved_in_bounds"] = r.bounds.proved;
        return py::make_tuple(r.cuda, r.debug_log, bounds, r.warnings);
      },
      py::arg("fn"), py::arg("args"), py::arg("options"), py::arg("callees") = py::list(),
      "Specializes fn to the arguments (ArgValues) with the options (CompileOptions) and "
      "returns (CUDA source with launch plan, debug log, {accesses, proved_in_bounds}, "
      "[warning]).");

  m.def(
      "next_launch_stamp", &next_launch_stamp,
      "Advances the launch counter of BoundLaunch.last_used and returns it (for launchers "
      "written in Python).");

  py::class_<runtime::Program, std::shared_ptr<runtime::Program>>(m, "Program")
      .def(py::init([](std::string source, std::vector<std::string> includes,
                       std::vector<std::string> flags, std::vector<std::string> links) {
             runtime::NvrtcOptions o;
             o.include_dirs = std::move(includes);
             o.extra_flags = std::move(flags);
             o.link_libraries = std::move(links);
             return std::make_shared<runtime::Program>(std::move(source), std::move(o));
           }),
           py::arg("source"), py::arg("include_dirs") = std::vector<std::string>{},
           py::arg("extra_flags") = std::vector<std::string>{},
           py::arg("link_libraries") = std::vector<std::string>{},
           "A program from CUDA source with a launch plan; the options add to the plan's own "
           "include, flag and link lines.")
      .def_property_readonly("source", &runtime::Program::source)
      .def_property_readonly("one_line_source", &runtime::Program::one_line_source,
                             "The source in the one-line form torch.compile graphs carry.")
      .def_property_readonly("function", [](const runtime::Program& p) { return p.plan().function; })
      .def_property_readonly("signature",
                             [](const runtime::Program& p) { return p.plan().signature; })
      .def_property_readonly("params",
                             [](const runtime::Program& p) {
                               std::vector<std::pair<std::string, bool>> out;
                               for (const auto& q : p.plan().params) out.emplace_back(q.name, q.written);
                               return out;
                             })
      .def("launch",
           [](const runtime::Program& p, const std::vector<at::Tensor>& outs,
              const std::vector<at::Tensor>& ins) { runtime::launch_eager(p, outs, ins); },
           py::arg("outs"), py::arg("ins"),
           "Runs the program on the tensors (written ones first), on the current stream.")
      .def(
          "bind",
          [](std::shared_ptr<runtime::Program> p, std::vector<int> outs, std::vector<int> ins) {
            return bind_launch(std::move(p), std::move(outs), std::move(ins));
          },
          py::arg("outs"), py::arg("ins"),
          "A launcher for calls whose arguments at positions `outs` are the written tensors and "
          "at `ins` the read ones.")
      .def("prepare", &runtime::prepare_on_current_stream, py::arg("device"),
           py::call_guard<py::gil_scoped_release>(),
           "Compiles and loads the kernels for `device` now (not during a stream capture).")
      .def("compile", &runtime::Program::compile, py::arg("arch"),
           py::call_guard<py::gil_scoped_release>(),
           "Compiles for an architecture such as 'sm_90' without loading (no GPU needed); "
           "returns the binary's size.")
      .def("with_binaries", &runtime::Program::with_binaries, py::arg("archs"), py::arg("ptx"),
           py::call_guard<py::gil_scoped_release>(),
           "The text with CUBIN stored for each architecture ('sm_90', ...) and, with ptx, PTX "
           "for the oldest; needs NVRTC, no GPU.")
      .def_property_readonly("stored_archs",
                             [](const runtime::Program& p) {
                               std::vector<std::string> archs;
                               for (const auto& b : p.stored_binaries()) archs.push_back(b.arch);
                               return archs;
                             })
      .def_property_readonly("location", [](const runtime::Program& p) { return p.plan().location; })
      .def_property_readonly("profile_name", &runtime::Program::profile_name,
                             "The name of each call's range in profiler traces.");

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
            o.headers = prelude_headers();
            return runtime::compile_cuda(source, "parir_kernels.cu", o);
          }();
        }
        return py::make_tuple(py::bytes(out.binary), out.is_cubin, out.log);
      },
      py::arg("source"), py::arg("arch"), py::arg("use_cache") = false,
      "Compiles CUDA source with NVRTC: (binary, is_cubin, log). No GPU needed.");
  m.def("nvrtc_version", &runtime::nvrtc_version);
  m.def("nvrtc_supported_archs", &runtime::nvrtc_supported_archs);
  m.def(
      "set_log_sink",
      [](std::function<void(int, std::string)> sink) {
        // pybind11 takes the GIL around each call of the Python function.
        runtime::set_log_sink([sink](runtime::LogLevel level, const std::string& message) {
          if (Py_IsInitialized()) sink(static_cast<int>(level), message);
        });
      },
      py::arg("sink"),
      "Sends the runtime's messages (NVRTC compilations, disk cache hits, stored binaries, "
      "programs dropped) to sink(level, message), level being a Python logging level.");
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
  m.attr("DEFAULT_THREADS_PER_BLOCK") = LoopPar::kDefaultThreadsPerBlock;
  m.attr("half_header") = kHalfHeader;
}

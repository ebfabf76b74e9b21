#!/usr/bin/env bash
# The C++ deployment round trip in one command: export a TorchScript model that calls parir
# kernels (Python), build run_model against LibTorch and libparir_torch_ops (CMake), and run it
# with no Python in the process: once compiling the kernels from the program text, once with
# binaries stored in it and no NVRTC. Run from anywhere; needs an NVIDIA GPU to run the model.
#   bash examples/cpp_deploy/run.sh [BUILD_DIR]
# Exit status: 0 when the C++ output matches the float64 reference and the Python output, 1 when
# it does not, 2 when there is no GPU to run on, another non-zero status when a step fails.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(realpath -m "${1:-$here/build}")"
mkdir -p "$build"

python3 "$here/export_model.py" "$build"
if ! python3 -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 2)'; then
  echo "run.sh: the model is in $build; running it from C++ needs an NVIDIA GPU, and PyTorch" \
    "finds no CUDA GPU here" >&2
  exit 2
fi

torch_cmake="$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if ! cmake -S "$here" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$torch_cmake" >"$build/cmake-configure.log" 2>&1; then
  tail -n 20 "$build/cmake-configure.log" >&2
  echo "run.sh: CMake could not configure the C++ program (it needs cmake, LibTorch and the CUDA" \
    "toolkit's headers); the log is $build/cmake-configure.log" >&2
  exit 3
fi
cmake --build "$build" -j "$(nproc)"

# The program must not load Python: linked against neither libpython nor PyTorch's Python
# bindings, and run without Python's environment. (LibTorch itself lives under site-packages
# here, so the paths say "python"; the library names must not.)
if ldd "$build/run_model" | awk '{print $1}' | grep -E '^lib(python|torch_python)'; then
  echo "run_model links Python" >&2
  exit 1
fi
# A fresh kernel cache: the program compiles the kernels from the program text itself.
rm -rf "$build/kernel-cache" "$build/kernel-cache-aot"
env -u PYTHONPATH -u PYTHONHOME PARIR_CACHE_DIR="$build/kernel-cache" \
  "$build/run_model" "$build/model.pt" "$build/data.pt"
# The same model with binaries stored for this GPU (parir.aot), run where NVRTC cannot be
# loaded: PARIR_NVRTC_PATH is the only place looked at, and points at nothing. The log says
# which binary was loaded.
echo "with stored binaries, without NVRTC:"
env -u PYTHONPATH -u PYTHONHOME PARIR_CACHE_DIR="$build/kernel-cache-aot" \
  PARIR_NVRTC_PATH="$build/no-nvrtc" PARIR_LOGS=debug \
  "$build/run_model" "$build/model_aot.pt" "$build/data.pt"

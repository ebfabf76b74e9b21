#!/usr/bin/env bash
# The C++ deployment round trip in one command: export a TorchScript model that calls parir
# kernels (Python), build run_model against LibTorch and libparir_torch_ops (CMake), and run it
# with no Python in the process. Run from anywhere; needs an NVIDIA GPU for the last step.
#   bash examples/cpp_deploy/run.sh [BUILD_DIR]
# Exit status: 0 when the C++ output matches the float64 reference and the Python output, 1 when
# it does not, 2 when there is no GPU to run on, another non-zero status when a step fails.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(realpath -m "${1:-$here/build}")"
mkdir -p "$build"

python3 "$here/export_model.py" "$build"

torch_cmake="$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$here" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$torch_cmake" >"$build/cmake-configure.log"
cmake --build "$build" -j "$(nproc)"

# The program must not load Python: linked against neither libpython nor PyTorch's Python
# bindings, and run without Python's environment. (LibTorch itself lives under site-packages
# here, so the paths say "python"; the library names must not.)
if ldd "$build/run_model" | awk '{print $1}' | grep -E '^lib(python|torch_python)'; then
  echo "run_model links Python" >&2
  exit 1
fi
# A fresh kernel cache: the program compiles the kernels from the program text itself.
rm -rf "$build/kernel-cache"
env -u PYTHONPATH -u PYTHONHOME PARIR_CACHE_DIR="$build/kernel-cache" \
  "$build/run_model" "$build/model.pt" "$build/data.pt"

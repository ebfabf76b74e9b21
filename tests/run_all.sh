#!/usr/bin/env bash
# The whole test suite: the C++ core's GoogleTest suite (through CMake and CTest), then pytest
# (CPU tests always; GPU tests, marked `gpu`, when a CUDA GPU is present).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p build

# CMake's configure step fails when GoogleTest or fmt is missing (e.g. on a GPU machine with no
# developer packages); outside CI that only skips the C++ tests.
if cmake -S csrc -B build/cpp -DCMAKE_BUILD_TYPE=RelWithDebInfo >build/cmake-configure.log 2>&1 \
    || { [ "${CI:-}" = "true" ] && cat build/cmake-configure.log && exit 1; }; then
  cmake --build build/cpp -j "$(nproc)"
  ctest --test-dir build/cpp --output-on-failure
else
  echo "C++ core tests skipped: CMake could not configure them (see build/cmake-configure.log;"
  echo "they need cmake, libgtest-dev and libfmt-dev)"
fi

python3 -m pytest -q tests/python "$@"

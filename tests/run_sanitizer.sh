#!/usr/bin/env bash
# The GPU tests under NVIDIA's compute-sanitizer (it comes with the CUDA toolkit):
#   memcheck   every out-of-bounds or misaligned device memory access, of parir's kernels and of
#              everything else the tests run;
#   racecheck  shared-memory races, on the reduction tests (block and cluster reductions are
#              where parir's kernels share memory between threads), on the atomic updates
#              between parallel levels, whose old value reaches the block through shared memory,
#              on time loops run in tiles of time steps and on matrix products run in register
#              tiles (tiles in shared memory).
# Usage: bash tests/run_sanitizer.sh [OUT_DIR]  (logs in OUT_DIR, default build/sanitizer).
# MEMCHECK_TESTS and RACECHECK_TESTS choose other pytest arguments. Exits non-zero when a tool
# reports an error or a test fails. Kernels run 10-100x slower under the tools.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-build/sanitizer}"
mkdir -p "$out"
rm -f "$out"/*.log
# Each tensor its own cudaMalloc, so that memcheck sees an overrun past a tensor's end instead of
# a read of the caching allocator's next block.
export PYTORCH_NO_CUDA_MEMORY_CACHING=1
memcheck_tests="${MEMCHECK_TESTS:-tests/python/test_gpu.py tests/python/test_cached_launch.py tests/python/test_bounds.py tests/python/test_slices.py tests/python/test_types.py tests/python/test_functions.py tests/python/test_arguments.py}"
racecheck_tests="${RACECHECK_TESTS:-tests/python/test_reductions.py tests/python/test_atomics.py::test_gpu_block_level_update_shares_its_old_value tests/python/test_atomics.py::test_gpu_block_level_old_values_of_every_dtype tests/python/test_time_tiling.py::test_rule_90_integer_automaton tests/python/test_time_tiling.py::test_wave_with_source_tiled_equals_step_by_step_and_python tests/python/test_product_tiling.py::test_syrk_and_syr2k_update_the_lower_triangle_only tests/python/test_product_tiling.py::test_trmm_with_k_ranges_that_follow_the_row}"

status=0
run() {  # tool, pytest arguments...
  local tool="$1"
  shift
  echo "== compute-sanitizer --tool $tool: $*"
  # shellcheck disable=SC2086
  compute-sanitizer --tool "$tool" --target-processes all --print-limit 20 \
    --log-file "$out/$tool.%p.log" python3 -m pytest -q -p no:cacheprovider -m gpu "$@" \
    || status=1
  local errors
  # "ERROR SUMMARY: N errors" (memcheck), "RACECHECK SUMMARY: ... (N errors, M warnings)".
  errors=$(grep -h "SUMMARY" "$out"/"$tool".*.log | grep -o "[0-9]\+ errors" \
           | awk '{s += $1} END {print s + 0}')
  echo "$tool: $(ls "$out"/"$tool".*.log | wc -l) processes, $errors errors"
  [ "$errors" = 0 ] || status=1
}
# shellcheck disable=SC2086
run memcheck $memcheck_tests
# shellcheck disable=SC2086
run racecheck $racecheck_tests
exit $status

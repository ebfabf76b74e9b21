"""Random programs from tests/fuzz/generate.py through the compiler, on fixed seeds.

On the CPU each program is compiled to CUDA, the CUDA by NVRTC, and the launch plan checked
against the source and the arguments; the program also runs as plain Python, so a generator
bug shows as such. On a GPU (marker `gpu`) each program runs as kernels and as plain Python
and the results are compared. tests/fuzz/run.py runs more seeds from the command line.

KNOWN_ISSUES names the generator features whose programs the compiler currently gets wrong
(each one a class of failure with a minimal reproducer): programs using one are skipped, so
the test guards everything else. Remove an entry when its fix lands.
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "fuzz"))

import generate  # noqa: E402
import run as fuzz_run  # noqa: E402

KNOWN_ISSUES = [
]

CPU_SEEDS = {"ordinary": range(0, 100), "awkward": range(100_000, 100_060),
             "mixed": range(200_000, 200_060)}
GPU_SEEDS = {"ordinary": range(300_000, 300_040), "mixed": range(400_000, 400_030)}
# Programs with matrix products (which run as tiled kernels), with the names mode each was
# drawn with: run.py --feature matrix_product finds more.
PRODUCT_SEEDS = [
    (100001, "mixed"), (100019, "mixed"), (100023, "ordinary"), (100027, "awkward"),
    (100038, "ordinary"), (100039, "awkward"), (100043, "mixed"), (100088, "ordinary"),
    (100046, "mixed"), (100048, "awkward"), (100054, "awkward"), (100061, "mixed"),
    (100070, "mixed"), (100089, "awkward"), (100084, "awkward"), (100087, "awkward"),
]


def _failures(mode, seeds, names):
    # One process: forking a pytest process that has loaded CUDA libraries can hang.
    results = fuzz_run.run(mode, seeds, names, jobs=1)
    failures, skipped = [], 0
    for outcome, items in results.items():
        for seed, message, program in items:
            if outcome == "ok":
                continue
            if program is not None and set(KNOWN_ISSUES) & program.features:
                skipped += 1
                continue
            first = message.strip().splitlines()[0] if message.strip() else ""
            failures.append(f"{names} seed {seed}: {outcome}: {first[:300]}")
    return failures, skipped


@pytest.mark.parametrize("names", sorted(CPU_SEEDS))
def test_random_programs_compile(names):
    failures, skipped = _failures("compile", CPU_SEEDS[names], names)
    assert skipped < len(CPU_SEEDS[names])
    assert not failures, "\n".join(failures)


def test_plans_with_optional_shared_memory_and_aligned_copies_are_checked():
    # Rows kept in shared memory where the GPU gives it, and a copy for aligned tensors: the
    # plan check once read such launch lines as unparsable (seeds 90229 and 90300).
    failures, _ = _failures("compile", [90229, 90300], "awkward")
    assert not failures, "\n".join(failures)
    line = ("//@ launch goto_0 grid(1000) block(32) shared(65536 if available) (a, out2) "
            "aligned(goto_0_aligned)")
    m = fuzz_run._LAUNCH.match(line)
    assert m and m.groups() == ("goto_0", "1000", "32", "a, out2", "goto_0_aligned")


@pytest.mark.gpu
@pytest.mark.parametrize("names", sorted(GPU_SEEDS))
def test_random_programs_match_plain_python(names):
    failures, skipped = _failures("gpu", GPU_SEEDS[names], names)
    assert skipped < len(GPU_SEEDS[names])
    assert not failures, "\n".join(failures)


def test_generator_is_deterministic():
    a, b = generate.generate(7, "mixed"), generate.generate(7, "mixed")
    assert a.source == b.source and a.spec == b.spec and a.features == b.features


def test_seeds_with_feature_finds_programs_that_use_it():
    seeds = fuzz_run.seeds_with_feature("matrix_product", 100_000, 3, "mixed", gpu_sized=True)
    assert len(seeds) == 3 and seeds == sorted(seeds)
    for seed in seeds:
        assert "matrix_product" in generate.generate(seed, "mixed", gpu_sized=True).features


@pytest.mark.parametrize("mode", ["compile", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_matrix_product_programs(mode):
    failures = []
    for seed, names in PRODUCT_SEEDS:
        # A change to the generator can draw another program for a seed: keep the list true.
        assert "matrix_product" in generate.generate(seed, names, gpu_sized=True).features, seed
        failures += _failures(mode, [seed], names)[0]
    assert not failures, "\n".join(failures)

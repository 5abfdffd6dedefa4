#!/usr/bin/env bash
# Build halox and run every test: the README's test command and what CI runs.
#
#   scripts/test.sh [--quick] [build-dir]       (default build-dir: build)
#
# 1. installs missing dependencies through scripts/setup.sh (Debian packages only);
# 2. fuzzing: libFuzzer harnesses of the .gro and checkpoint readers, a bounded run each
#    (HALOX_FUZZ_SECONDS, default 60) starting from the seed corpora in tests/fuzz, with a
#    fixed libFuzzer seed (HALOX_FUZZ_SEED) so that a CI failure can be replayed; longer
#    exploratory runs with other seeds are described in tests/fuzz/README.md;
# 3. an AddressSanitizer + UndefinedBehaviorSanitizer build runs the CPU and MPI test suite
#    (without the tests labelled "long");
# 4. the CPU emulation of the CUDA code (tests/emu, -DHALOX_GPU_EMULATE=ON; a block's threads
#    are fibers of one host thread) runs the GPU tests labelled "emulation": the GPU context on
#    one device while the caller keeps the other current, the gpu-mpi halo and the gpu MD
#    engine on it, the pair kernels and the list build against the CPU (test_gpu_nb --quick),
#    the GPU update, the ethanol mixture's bonded terms and SHAKE (test_gpu_ethanol --quick),
#    no rank left waiting on the GPU halo backends (test_gpu_waits), the engine's one-GPU step
#    against the CPU engine (test_gpu_md --quick: graph replay, step timing, thermostat), the
#    decomposed GPU step on 2 ranks against one GPU (test_gpu_dd_md --quick: every halo
#    backend; test_gpu_ethanol_dd), the device search step against the host decomposition
#    (test_gpu_decomp) and the engine searching on the device against searching on the host
#    (test_gpu_dd_search --quick in one process, and on 2 ranks with gpu-mpi's, gpu-direct's
#    and nvshmem's messages), every halo backend on 2 and 4 ranks (test_gpu_halo --small), the
#    emulation's own scheduler (test_emu_sched), and the single-process tests again with the
#    threads of a block in the opposite order (HALOX_EMU_SCHEDULE=lifo: a race between threads
#    fails one of the two runs) (about 6 minutes on 2 cores; the halo tests' full sizes and the
#    long physics runs need the GPU);
# 5. the Release build (warnings as errors) runs the whole CTest suite: CPU, MPI with several
#    ranks, install, GROMACS comparisons. GPU tests are compiled where nvcc exists and report
#    SKIPPED without a GPU.
# The Release stage also checks that the sources follow .clang-format; both modes first check
# the layering of the sources (scripts/check_layers.py).
# --quick runs step 5 only, without the tests labelled "long" (physics runs of tens of seconds
# to minutes: NVE drift, determinism, decomposed MD on 3-8 ranks, GROMACS trajectories).
# CI runs everything.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
quick=0
if [[ ${1:-} == --quick ]]; then
    quick=1
    shift
fi
build=${1:-$here/build}
jobs=$(nproc 2>/dev/null || echo 2)

if [[ $quick -eq 1 ]]; then
    "$here/scripts/setup.sh"
else
    "$here/scripts/setup.sh" --fuzz
fi

# The layering of the sources (docs/ARCHITECTURE.md): no include cycle between folders, the
# documented order, app/ on the public API only. Seconds; first, so that a wrong include fails
# before any build.
echo "== layers"
python3 "$here/scripts/check_layers.py"

if [[ $quick -eq 0 ]]; then
    echo "== fuzzing (${HALOX_FUZZ_SECONDS:-60} s per reader)"
    fb=$build-fuzz
    cmake -S "$here" -B "$fb" -DCMAKE_C_COMPILER=clang -DHALOX_FUZZ=ON -DHALOX_WITH_MPI=OFF \
        -DHALOX_WITH_OPENMP=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo > "$fb.configure.log"
    cmake --build "$fb" -j "$jobs" --target fuzz_gro fuzz_checkpoint > "$fb.build.log"
    for h in gro checkpoint; do
        corpus=$(mktemp -d)
        cp "$here/tests/fuzz/corpus_$h/"* "$corpus/"
        "$fb/tests/fuzz_$h" -max_total_time="${HALOX_FUZZ_SECONDS:-60}" -max_len=4096 \
            -rss_limit_mb=2048 -seed="${HALOX_FUZZ_SEED:-20261202}" -print_final_stats=1 "$corpus" 2> "$fb.$h.log" ||
            { tail -40 "$fb.$h.log"; exit 1; }
        grep -E "^Done|stat::number_of_executed_units" "$fb.$h.log" | sed "s/^/fuzz_$h: /"
        rm -rf "$corpus"
    done

    echo "== AddressSanitizer + UndefinedBehaviorSanitizer build, CPU and MPI tests"
    sb=$build-asan
    # CUDA off here: the sanitizers check the host code; the CUDA code is compiled (and its
    # tests report skipped without a GPU) in the Release stage.
    cmake -S "$here" -B "$sb" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHALOX_WITH_CUDA=OFF \
        -DHALOX_SANITIZE=address,undefined > "$sb.configure.log"
    cmake --build "$sb" -j "$jobs" > "$sb.build.log" 2>&1 || { tail -30 "$sb.build.log"; exit 1; }
    # Open MPI's own allocations at exit are not ours: suppress leaks inside its libraries only.
    export LSAN_OPTIONS="suppressions=$here/tests/lsan.supp:print_suppressions=0"
    export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
    export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
    # The long physics runs (NVE drift, decomposed MD on 3-8 ranks, ethanol trajectories) run in
    # the Release stage: under the sanitizers they take 5-10x longer and cover no code that the
    # short tests do not already run.
    (cd "$sb" && ctest --output-on-failure -j "$jobs" --timeout 1800 -LE "gromacs|install|long")
    unset LSAN_OPTIONS ASAN_OPTIONS UBSAN_OPTIONS

    echo "== CPU emulation of the GPU code (two emulated devices), tests labelled emulation"
    eb=$build-emu
    # The launcher's timeout (which ends a hung multi-rank test) as on the GPU, 300 s: the
    # longest emulated test takes ~90 s on 2 cores since the threads of a block are fibers (with a
    # host thread each, the 2-rank device search test took 300-540 s).
    cmake -S "$here" -B "$eb" -DCMAKE_BUILD_TYPE=Release -DHALOX_GPU_EMULATE=ON \
        -DHALOX_GPU_LAUNCH_TIMEOUT=300 -DHALOX_WERROR=ON > "$eb.configure.log"
    # Also the fused NVSHMEM exchange (NVSHMEM emulated over shared memory between the ranks)
    # against the host backend on 2 and 4 ranks, its ordering faults (HALOX_TEST_INJECT) as
    # tests that must fail, and the emulation's own model and deadlines: about 30 s of build and
    # 60 s of tests more on 2 cores (docs/design/gpu-halo.md).
    # The programs the tests run (several tests may run one program with other options), and
    # the halox program where a test runs it (test_gpu_search_trace: a traced run):
    emu_targets=$(cd "$eb" && ctest -N -V -L emulation | grep -oE "$eb/tests/test_[A-Za-z0-9_]+" |
        sed 's|.*/||' | sort -u)
    # (grep reads everything: grep -q would end the pipe early and, under pipefail, fail it)
    # ($eb may be relative: ctest prints absolute paths, which end in it)
    if (cd "$eb" && ctest -N -V -L emulation | grep -F "$eb/halox\"" > /dev/null); then
        emu_targets="$emu_targets halox_app"
    fi
    # shellcheck disable=SC2086 # one target per word
    cmake --build "$eb" -j "$jobs" --target $emu_targets > "$eb.build.log" 2>&1 ||
        { tail -30 "$eb.build.log"; exit 1; }
    (cd "$eb" && ctest --output-on-failure -j 1 --timeout 360 -L emulation)
fi

echo "== Release build, full test suite"
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release -DHALOX_WERROR=ON
cmake --build "$build" -j "$jobs"
if command -v clang-format > /dev/null; then
    cmake --build "$build" --target format-check # sources follow .clang-format
fi
cd "$build"
if [[ $quick -eq 1 ]]; then
    ctest --output-on-failure -j "$jobs" --timeout 900 -LE long
else
    ctest --output-on-failure -j "$jobs" --timeout 900
fi

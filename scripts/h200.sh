#!/usr/bin/env bash
# The GPU session on the H200 test machine, in one call: record the machine, build halox with
# CUDA + NVSHMEM + MPI, start MPS, run every GPU test (ctest -L gpu, several PEs on the one GPU),
# compute-sanitizer on the single-process GPU tests, the GPU benchmarks, stop MPS, and print a
# short table last. Everything it writes goes under $OUT (default: out/h200): summary.txt,
# env.txt, logs.tar.gz (every log) and results.tar.gz (benchmark JSON).
#
#   scripts/h200.sh [--build-only] [--tests] [--sanitize] [--bench] [--bench-quick]
#                   [--bench-suite] [--filter REGEX] [--build DIR] [--exec FILE]...
#
# Without a selection it runs --tests --sanitize --bench. --bench-suite runs `halox bench --suite
# paper` in what is left of the call instead of the fixed benchmark list (scripts/h200_bench.sh;
# HALOX_SUITE_ARGS adds options, e.g. "--max-atoms 720000"). --filter limits ctest (-R). --exec
# sources FILE after the tests (MPS running; RES, BUILD, HALOX and say set): a one-off
# measurement, e.g. scripts/h200_probe.sh; given several times, the files run in order. The
# machine has no network: cJSON comes from the .deb files in .deps/ when it is not installed
# (carry .deps with the call), NVSHMEM from the nvidia-nvshmem-cu13 wheel that is installed
# there. NVLink multicast stays off (NVSHMEM_DISABLE_NVLS=1) everywhere.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$here/out/h200}
mkdir -p "$OUT/logs" "$OUT/results"
build=/tmp/halox-h200-build
do_tests=0 do_san=0 do_bench=0 bench_quick=0 bench_suite=0 build_only=0 filter="" exec_files=()
while [[ $# -gt 0 ]]; do
    case "$1" in
    --tests) do_tests=1 ;;
    --sanitize) do_san=1 ;;
    --bench) do_bench=1 ;;
    --bench-quick) do_bench=1 bench_quick=1 ;;
    --bench-suite) do_bench=1 bench_suite=1 ;;
    --build-only) build_only=1 ;;
    --filter) filter=$2; shift ;;
    --build) build=$2; shift ;;
    --exec) exec_files+=("$2"); shift ;;
    -h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "h200.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
if [[ $do_tests -eq 0 && $do_san -eq 0 && $do_bench -eq 0 && $build_only -eq 0 && ${#exec_files[@]} -eq 0 ]]; then
    do_tests=1 do_san=1 do_bench=1
fi
summary=$OUT/summary.txt
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }
t_start=$(date +%s)
elapsed() { echo $(($(date +%s) - t_start)); }
# One device call may run 600 s: every phase gets what is left of HALOX_H200_BUDGET (default
# 560 s) minus what the phases after it need, so a slow phase is cut, not the whole call.
budget=${HALOX_H200_BUDGET:-560}
left() { echo $((budget - $(elapsed))); }

export NVSHMEM_DISABLE_NVLS=1
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps_pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps_log

# ---- 1. the machine ----------------------------------------------------------------------
{
    date -u +%Y-%m-%dT%H:%M:%SZ
    uname -a
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem \
        --format=csv 2>&1
    nvidia-smi 2>&1 | head -20
    echo "== GPU topology (nvidia-smi topo -m)"
    nvidia-smi topo -m 2>&1
    nvcc --version 2>&1 | tail -2
    mpirun --version 2>&1 | head -1
    ompi_info 2>/dev/null | grep -i "cuda support" | head -2
    cmake --version | head -1
    nproc
} > "$OUT/env.txt" 2>&1
NVSHMEM_HOME_WHEEL=$(python3 -c "import nvidia.nvshmem as m; print(m.__path__[0])" 2>/dev/null)
echo "nvshmem wheel: ${NVSHMEM_HOME_WHEEL:-not found}" >> "$OUT/env.txt"
if [[ -n "$NVSHMEM_HOME_WHEEL" ]]; then
    export NVSHMEM_BOOTSTRAP_MPI_PLUGIN=$NVSHMEM_HOME_WHEEL/lib/nvshmem_bootstrap_mpi.so.3
    export LD_LIBRARY_PATH=$NVSHMEM_HOME_WHEEL/lib:${LD_LIBRARY_PATH:-}
fi

# ---- 2. dependencies without network ------------------------------------------------------
prefix=""
if ! ldconfig -p 2>/dev/null | grep -q "libcjson.so.1 "; then
    if ls "$here"/.deps/libcjson*.deb > /dev/null 2>&1; then
        rm -rf /tmp/halox-deps && mkdir -p /tmp/halox-deps
        for f in "$here"/.deps/libcjson*.deb; do dpkg -x "$f" /tmp/halox-deps; done
        prefix=/tmp/halox-deps/usr
        export LD_LIBRARY_PATH=$prefix/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
        echo "cjson: from .deps (dpkg -x into /tmp/halox-deps)" >> "$OUT/env.txt"
    else
        say "h200.sh: libcjson is not installed and .deps/ has no .deb: carry .deps"
        exit 1
    fi
fi

# ---- 3. build -----------------------------------------------------------------------------
gen=""
command -v ninja > /dev/null && gen="-G Ninja"
if ! cmake -S "$here" -B "$build" $gen -DCMAKE_BUILD_TYPE=Release -DHALOX_WITH_CUDA=ON \
    -DHALOX_WITH_MPI=ON -DHALOX_WITH_NVSHMEM=${HALOX_NVSHMEM:-ON} ${NVSHMEM_HOME_WHEEL:+-DNVSHMEM_HOME=$NVSHMEM_HOME_WHEEL} \
    ${prefix:+-DCMAKE_PREFIX_PATH=$prefix} > "$OUT/logs/configure.log" 2>&1; then
    say "configure FAILED (logs/configure.log):"
    tail -30 "$OUT/logs/configure.log" | tee -a "$summary"
    tar -C "$OUT" -czf "$OUT/logs.tar.gz" logs && rm -rf "$OUT/logs"
    exit 1
fi
if ! cmake --build "$build" -j "$(nproc)" > "$OUT/logs/build.log" 2>&1; then
    say "build FAILED (logs/build.log):"
    grep -E "error|Error" "$OUT/logs/build.log" | head -30 | tee -a "$summary"
    tar -C "$OUT" -czf "$OUT/logs.tar.gz" logs && rm -rf "$OUT/logs"
    exit 1
fi
"$build/halox" version > "$OUT/logs/version.txt" 2>&1
cat "$OUT/logs/version.txt" >> "$OUT/env.txt"
say "build ok ($(elapsed) s): $(grep -E 'gpu 0|gpus' "$OUT/logs/version.txt" | head -1)"
# The tree copied to a device machine may carry a stale .git: the caller passes the commit it
# sent, written out (HALOX_GIT_REVISION=9cb4eef; a $(git rev-parse HEAD) in the device command
# runs there, on that .git), and every result records that one. When this .git has the commit
# and the sources differ from it, the revision is recorded with "-dirty" and said so.
hx_rev=${HALOX_GIT_REVISION:-$(git -C "$here" rev-parse HEAD 2>/dev/null)}
if [[ -n $hx_rev ]] && git -C "$here" cat-file -e "$hx_rev^{commit}" 2>/dev/null &&
    ! git -C "$here" diff --quiet "$hx_rev" -- src include app cmake CMakeLists.txt tests \
        2> /dev/null; then
    say "note: the sources differ from $hx_rev (a stale .git here?): recorded as $hx_rev-dirty; pass the commit sent, written out, as HALOX_GIT_REVISION"
    hx_rev=$hx_rev-dirty
fi
export HALOX_GIT_REVISION=$hx_rev
echo "$HALOX_GIT_REVISION" > "$OUT/logs/git_revision.txt"

finish() {
    echo quit | nvidia-cuda-mps-control > /dev/null 2>&1 || true
    tar -C "$OUT" -czf "$OUT/logs.tar.gz" logs 2>/dev/null && rm -rf "$OUT/logs"
    if compgen -G "$OUT/results/*" > /dev/null; then
        tar -C "$OUT" -czf "$OUT/results.tar.gz" results && rm -rf "$OUT/results"
    else
        rmdir "$OUT/results" 2>/dev/null
    fi
    say "total $(elapsed) s"
}
trap finish EXIT
[[ $build_only -eq 1 ]] && exit 0

# ---- 4. MPS: several PEs on one GPU run concurrently only under MPS -----------------------
ngpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
mps_start() { nvidia-cuda-mps-control -d >> "$OUT/logs/mps.log" 2>&1; }
mps_stop() { echo quit | nvidia-cuda-mps-control > /dev/null 2>&1; sleep 1; }
# A test that crashes under MPS can leave the server unable to serve new clients ("the CUDA
# runtime could not be initialised" for every later process): after a failed test, a one-second
# CUDA program says whether the GPUs still answer, and MPS is restarted when they do not.
gpu_healthy() { timeout -s KILL 30 "$build/halox" version > /dev/null 2>&1; }
mps_start && say "MPS started ($ngpus GPU(s))" || say "MPS did not start"

# ---- 5. GPU tests, per placement ---------------------------------------------------------
# Placements (name, MPS on/off, visible GPUs, tests):
#   1gpu        every GPU test, every rank on GPU 0 under MPS (the one-GPU machine's setting);
#   Ngpu-1pp    with N >= 2 GPUs (N the count): the tests of 2 .. N ranks (2, 4, 8), one rank
#               per GPU, without MPS, and the one-rank GPU context test (its context on GPU 1
#               while GPU 0 is current);
#   Ngpu-1pp-mps  the same under MPS;
#   Ngpu-spread   the tests of more ranks than GPUs spread over all of them under MPS (none
#               with 8 GPUs).
# Each test runs on its own (ctest -R '^name$') under an outer SIGKILL timeout: a hung GPU process
# ignores ctest's timeout. Results: logs/ctest_<placement>.log, one line per test in the summary,
# prefixed with the placement.
run_placement() { # name mps(0|1) visible regex
    local pname=$1 mps=$2 vis=$3 regex=$4 t rc line npass=0 nfail=0
    if [[ $mps -eq 1 ]]; then mps_start; else mps_stop; fi
    local plog=$OUT/logs/ctest_$pname.log
    : > "$plog"
    local tests
    tests=$(cd "$build" && ctest -L gpu -N ${filter:+-R "$filter"} |
        sed -nE 's/^ *Test +#[0-9]+: ([A-Za-z0-9_]+)$/\1/p' | grep -E "$regex")
    for t in $tests; do
        if [[ $(left) -lt $((reserve + 20)) ]]; then
            say "  [$pname] $t: not run (the call's time is spent)"
            continue
        fi
        (cd "$build" && CUDA_VISIBLE_DEVICES=$vis timeout -s KILL "${HALOX_H200_TEST_TIMEOUT:-150}" \
            ctest -R "^$t\$" --output-on-failure --timeout "${HALOX_H200_TEST_TIMEOUT:-150}") >> "$plog" 2>&1
        rc=$?
        line=$(grep -E "Test +#[0-9]+: $t " "$plog" | tail -1 | sed -E 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: //')
        [[ $rc -eq 137 ]] && line="$t ***Killed (outer timeout)"
        [[ -z $line ]] && line="$t rc $rc"
        say "  [$pname] $line"
        if [[ $rc -eq 0 ]]; then
            npass=$((npass + 1))
        else
            nfail=$((nfail + 1))
            if ! gpu_healthy; then
                say "  [$pname] the GPUs do not answer after $t: restarting MPS"
                mps_stop
                [[ $mps -eq 1 ]] && mps_start
                gpu_healthy || say "  [$pname] still no answer after the restart"
            fi
        fi
    done
    say "  [$pname] $npass passed, $nfail failed"
    echo "$pname $npass $nfail" >> "$OUT/logs/placements.txt"
}
if [[ $do_tests -eq 1 ]]; then
    reserve=0
    [[ $do_san -eq 1 ]] && reserve=$((reserve + 60))
    [[ $do_bench -eq 1 ]] && reserve=$((reserve + ${HALOX_H200_BENCH_RESERVE:-200}))
    say ""
    say "GPU tests ($(elapsed) s):"
    placements=${HALOX_H200_PLACEMENTS:-auto}
    # rank counts of the multi-rank tests that fit one per GPU, and those that do not
    all_gpus=$(seq -s, 0 $((ngpus - 1)))
    fit='' over=''
    for k in 2 4 8; do
        if [[ $k -le $ngpus ]]; then fit=$fit${fit:+|}$k; else over=$over${over:+|}$k; fi
    done
    if [[ $placements == auto ]]; then
        placements=1gpu
        if [[ $ngpus -ge 2 ]]; then
            placements="${ngpus}gpu-1pp ${ngpus}gpu-1pp-mps"
            [[ -n $over ]] && placements="$placements ${ngpus}gpu-spread"
            placements="$placements 1gpu"
        fi
    fi
    for pl in $placements; do
        case $pl in
        1gpu) run_placement 1gpu 1 0 '.' ;;
        "${ngpus}gpu-1pp") run_placement "$pl" 0 "$all_gpus" "_np($fit)\$|^test_gpu_context_np1\$" ;;
        "${ngpus}gpu-1pp-mps") run_placement "$pl" 1 "$all_gpus" "_np($fit)\$" ;;
        "${ngpus}gpu-spread") run_placement "$pl" 1 "$all_gpus" "_np($over)\$" ;;
        *) say "  unknown placement '$pl' (with $ngpus GPU(s): 1gpu, ${ngpus}gpu-1pp, ${ngpus}gpu-1pp-mps, ${ngpus}gpu-spread)" ;;
        esac
    done
    mps_stop
    mps_start
fi

# ---- 6. compute-sanitizer on the single-process GPU tests ---------------------------------
if [[ $do_san -eq 1 ]] && command -v compute-sanitizer > /dev/null; then
    say ""
    say "compute-sanitizer ($(elapsed) s):"
    for t in $(cd "$build" && ctest -L gpu -LE mpi -N ${filter:+-R "$filter"} |
        sed -nE 's/^ *Test +#[0-9]+: (test_gpu[A-Za-z0-9_]*)$/\1/p'); do
        exe=$(find "$build/tests" -maxdepth 1 -name "$t" -type f | head -1)
        [[ -x "$exe" ]] || continue
        for tool in memcheck racecheck synccheck; do
            HALOX_GPU_TEST_QUICK=1 timeout 240 compute-sanitizer --tool $tool --error-exitcode 9 "$exe" \
                ${HALOX_SANITIZE_ARGS:-} > "$OUT/logs/san_${t}_$tool.log" 2>&1
            rc=$?
            errs=$(grep -Eo "(ERROR|RACECHECK) SUMMARY: [0-9]+ (error|hazard)" "$OUT/logs/san_${t}_$tool.log" | tail -1)
            say "  $t $tool: rc $rc ${errs:-(no summary)}"
        done
    done
fi

# ---- 7. a one-off measurement -------------------------------------------------------------
# --exec may be given several times: the files run in order, each with what is left of the call.
for exec_file in "${exec_files[@]}"; do
    say ""
    say "$exec_file ($(elapsed) s):"
    export RES=$OUT/results BUILD=$build HALOX=$build/halox
    # shellcheck source=/dev/null
    source "$exec_file"
done

# ---- 8. benchmarks ------------------------------------------------------------------------
# Each line: a name and a command run from the build directory; the command writes its JSON to
# $RES/<name>.json. scripts/h200_bench.sh holds the list (sourced, so it can use these names).
if [[ $do_bench -eq 1 ]]; then
    say ""
    say "benchmarks ($(elapsed) s):"
    export RES=$OUT/results BUILD=$build HALOX=$build/halox QUICK=$bench_quick SUITE=$bench_suite
    # shellcheck source=/dev/null
    source "$here/scripts/h200_bench.sh"
fi

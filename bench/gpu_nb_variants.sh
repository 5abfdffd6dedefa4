#!/usr/bin/env bash
# The pair-kernel variants on one GPU, in one device call of about 5 minutes: build halox (CUDA,
# no MPI, no NVSHMEM: only what the single-GPU step needs), then
#   0. test_gpu_nb --quick (every variant against the CPU: correctness on the device);
#   1. gpu_md_bench at 45k atoms for every forces-only kernel (HALOX_GPU_NB_KERNEL = ref, table,
#      comb, table-pf, comb-pf): kernel time by CUDA events over 50 back-to-back launches, pair
#      evaluations per second, time per step and ns/day, without the rolling prune (nstlist 20)
#      and with it (nstlist 20 and 40, 4 parts);
#   2. gpu_md_bench at 180k and 360k for ref and the default kernel;
#   3. the engine (`halox bench md --backends gpu`, the issue's figure) at 45k, 180k, 360k for
#      ref and the default kernel, and the default kernel with the engine's rolling prune
#      (HALOX_GPU_PRUNE_PARTS=4, nstlist 20: outer 1.178 nm, inner from the estimate).
# JSON per run under $OUT (nb_<kernel>_<sizes>.json, md_<kernel>_p<parts>.json), logs under
# $OUT/logs, a table last. docs/design/gpu-engine.md has the predictions these are measured against.
#
#   OUT=/some/dir bench/gpu_nb_variants.sh [--quick]   (carry .deps when cJSON is not installed)
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$here/out/nb_variants}
mkdir -p "$OUT/logs"
build=/tmp/halox-nbvar-build
quick=0
[[ ${1:-} == --quick ]] && quick=1
t0=$(date +%s)
say() { echo "[$(($(date +%s) - t0)) s] $*" | tee -a "$OUT/summary.txt"; }
: > "$OUT/summary.txt"

{
    date -u +%Y-%m-%dT%H:%M:%SZ
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv 2>&1
    nvcc --version 2>&1 | tail -1
    git -C "$here" rev-parse HEAD 2>/dev/null
    git -C "$here" status --short 2>/dev/null | head -20
} > "$OUT/env.txt" 2>&1

# cJSON without network: from .deps/*.deb when not installed (as scripts/h200.sh)
prefix=""
if ! ldconfig -p 2>/dev/null | grep -q "libcjson.so.1 "; then
    if ls "$here"/.deps/libcjson*.deb > /dev/null 2>&1; then
        rm -rf /tmp/halox-deps && mkdir -p /tmp/halox-deps
        for f in "$here"/.deps/libcjson*.deb; do dpkg -x "$f" /tmp/halox-deps; done
        prefix=/tmp/halox-deps/usr
        export LD_LIBRARY_PATH=$prefix/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
    else
        say "libcjson is not installed and .deps/ has no .deb: carry .deps"
        exit 1
    fi
fi

gen=""
command -v ninja > /dev/null && gen="-G Ninja"
if ! cmake -S "$here" -B "$build" $gen -DCMAKE_BUILD_TYPE=Release -DHALOX_WITH_CUDA=ON \
    -DHALOX_WITH_MPI=OFF -DHALOX_WITH_NVSHMEM=OFF ${prefix:+-DCMAKE_PREFIX_PATH=$prefix} \
    > "$OUT/logs/configure.log" 2>&1; then
    say "configure FAILED"; tail -20 "$OUT/logs/configure.log"; exit 1
fi
if ! cmake --build "$build" -j "$(nproc)" --target gpu_md_bench halox_app test_gpu_nb \
    > "$OUT/logs/build.log" 2>&1; then
    if ! cmake --build "$build" -j "$(nproc)" >> "$OUT/logs/build.log" 2>&1; then
        say "build FAILED"; grep -E "error" "$OUT/logs/build.log" | head -20; exit 1
    fi
fi
say "built ($(grep -c . "$OUT/logs/build.log") log lines)"
# resource usage of the pair kernels, for the notes (registers, shared memory, spills)
obj=$(find "$build" -name "nb_gpu.cu.o" | head -1)
if [[ -n $obj ]] && command -v cuobjdump > /dev/null; then
    cuobjdump -res-usage "$obj" 2>&1 | grep -A1 "k_nb" > "$OUT/res_usage.txt"
    cuobjdump -sass "$obj" > "$OUT/logs/nb_gpu.sass" 2>&1
fi
bench=$build/tests/gpu_md_bench
halox=$(find "$build" -maxdepth 2 -type f -name halox -perm -u+x | head -1)

# 0. correctness on the device: test_gpu_nb checks every forces-only variant against the CPU
#    reference in double on each list (--quick sizes)
t=$(date +%s)
timeout 90 "$build/tests/test_gpu_nb" --quick > "$OUT/logs/test_gpu_nb.log" 2>&1
say "test_gpu_nb --quick: rc $? $(($(date +%s) - t)) s: $(tail -1 "$OUT/logs/test_gpu_nb.log")"

steps=2000 warm=200
[[ $quick -eq 1 ]] && steps=400 warm=50
run() { # name kernel args... (gpu_md_bench)
    local name=$1 k=$2
    shift 2
    local t=$(date +%s)
    HALOX_GPU_NB_KERNEL=$k timeout 120 "$bench" "$@" --json "$OUT/$name.json" \
        > "$OUT/logs/$name.log" 2>&1
    say "$name (kernel $k): rc $? $(($(date +%s) - t)) s"
}
# 1. every variant at 45k, with and without the rolling prune
for k in ref table comb table-pf comb-pf; do
    run "nb_${k}_45k" $k --atoms 45000 --steps $steps --warmup $warm --configs 20:0,20:4,40:4
done
# 2. the larger systems, reference and default kernel
for k in ref auto; do
    run "nb_${k}_big" $k --atoms 180000,360000 --steps $((steps / 2)) --warmup $warm \
        --configs 20:0,20:4
done
# 3. the engine: the issue's figure
if [[ -n $halox ]]; then
    # ref and auto kernels without the rolling prune, auto with the engine's prune in 4 parts
    for kp in ref:0 auto:0 auto:4; do
        k=${kp%:*} parts=${kp#*:} name=md_${kp%:*}_p${kp#*:}
        t=$(date +%s)
        HALOX_GPU_NB_KERNEL=$k HALOX_GPU_PRUNE_PARTS=$parts timeout 150 "$halox" bench md \
            --atoms 45000,180000,360000 --backends gpu --steps $steps --warmup $warm \
            -o "$OUT/$name.json" > "$OUT/logs/$name.log" 2>&1
        say "$name: rc $? $(($(date +%s) - t)) s"
    done
else
    say "no halox program found in $build"
fi

# table last: kernel time, evaluations/s, step, ns/day per run
python3 - "$OUT" << 'EOF' | tee -a "$OUT/summary.txt"
import json, glob, os, sys
out = sys.argv[1]
print("%-18s %7s %4s %5s %12s %8s %8s %8s %9s %8s" % ("run", "atoms", "nstl", "prune",
      "rlist/inner", "nb_us", "prune_us", "us/step", "Geval/s", "ns/day"))
for f in sorted(glob.glob(os.path.join(out, "nb_*.json"))):
    try:
        runs = json.load(open(f))["runs"]
    except Exception as e:
        print(os.path.basename(f), "unreadable:", e); continue
    for r in runs:
        nb = r.get("local_work_us", 0) or 0  # the forces-only pair kernel alone
        ev = r.get("pair_evaluations", 0) or 0
        print("%-18s %7d %4d %5d %6.3f/%5.3f %8.1f %8.1f %8.1f %9.1f %8.0f" % (
            os.path.basename(f)[3:-5], r["atoms"], r["nstlist"], r["prune_parts"], r["rlist"],
            r["rlist_inner"], nb, r.get("prune_kernel_us", 0), r.get("us_per_step_median_normal", 0),
            ev / nb * 1e-3 if nb else 0, r.get("ns_per_day", 0)))
for f in sorted(glob.glob(os.path.join(out, "md_*.json"))):
    try:
        runs = json.load(open(f))["runs"]
    except Exception as e:
        print(os.path.basename(f), "unreadable:", e); continue
    for r in runs:
        print("%-18s %7d %4d  engine rlist %.3f: %8.1f us/step %8.0f ns/day (with searches %.1f us, %.0f ns/day)" % (
            os.path.basename(f)[:-5], r["atoms"], r["nstlist"], r["rlist"], r["us_per_step"],
            r["ns_per_day"], r.get("us_per_step_with_search", 0), r.get("ns_per_day_with_search", 0)))
EOF

#!/usr/bin/env bash
# The pair-kernel variants on one GPU, in one device call of about 3-4 minutes: build halox (CUDA
# and MPI, no NVSHMEM: the gpu backend needs the gpu-mpi halo even for one process), then
#   0. test_gpu_nb --quick (every forces kernel variant against the CPU in double) and
#      test_gpu_md --quick (graph-replayed steps with the rolling prune beside the pair kernel);
#   1. gpu_md_bench at 45k atoms for the kernels ref, table, comb (HALOX_GPU_NB_KERNEL): kernel
#      time by CUDA events over 50 back-to-back launches, pair evaluations per second, time per
#      step and ns/day, without the rolling prune (nstlist 20) and with it (20:4, 20:8, 40:4);
#   2. gpu_md_bench at 180k and 360k, default kernel, 20:0, 20:4, 20:8;
#   3. the engine (`halox bench md --backends gpu` under mpirun -np 1, the issue's figure) at
#      45k, 180k, 360k: ref and the default kernel, and the default kernel with the engine's
#      rolling prune (HALOX_GPU_PRUNE_PARTS=4 and 8; nstlist 20: outer 1.178 nm, inner from the
#      buffer estimate).
# Everything lands in $OUT/nb_variants.tar.gz (JSON, logs, resource usage, SASS) plus
# $OUT/summary.txt; a table last. docs/design/gpu-engine.md has the predictions.
#
#   OUT=/some/dir bench/gpu_nb_variants.sh [--quick]   (carry .deps when cJSON is not installed)
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$here/out/nb_variants}
RES=/tmp/halox-nbvar-results
rm -rf "$RES" && mkdir -p "$RES/logs" "$OUT"
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
} > "$RES/env.txt" 2>&1

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
    -DHALOX_WITH_MPI=ON -DHALOX_WITH_NVSHMEM=OFF ${prefix:+-DCMAKE_PREFIX_PATH=$prefix} \
    > "$RES/logs/configure.log" 2>&1; then
    say "configure FAILED"; tail -20 "$RES/logs/configure.log"; exit 1
fi
if ! cmake --build "$build" -j "$(nproc)" --target gpu_md_bench halox_app test_gpu_nb test_gpu_md \
    > "$RES/logs/build.log" 2>&1; then
    if ! cmake --build "$build" -j "$(nproc)" >> "$RES/logs/build.log" 2>&1; then
        say "build FAILED"; grep -E "error" "$RES/logs/build.log" | head -20; exit 1
    fi
fi
say "built ($(grep -c . "$RES/logs/build.log") log lines)"
# resource usage of the pair kernels, for the notes (registers, shared memory, spills)
obj=$(find "$build" -name "nb_gpu.cu.o" | head -1)
if [[ -n $obj ]] && command -v cuobjdump > /dev/null; then
    cuobjdump -res-usage "$obj" 2>&1 | grep -A1 "k_nb" > "$RES/res_usage.txt"
    cuobjdump -sass "$obj" > "$RES/logs/nb_gpu.sass" 2>&1
fi
bench=$build/tests/gpu_md_bench
halox=$(find "$build" -maxdepth 2 -type f -name halox -perm -u+x | head -1)

# 0. correctness on the device (--quick sizes)
for t in test_gpu_nb test_gpu_md; do
    t1=$(date +%s)
    timeout 100 "$build/tests/$t" --quick > "$RES/logs/$t.log" 2>&1
    say "$t --quick: rc $? $(($(date +%s) - t1)) s: $(tail -1 "$RES/logs/$t.log")"
done

steps=2000 warm=200
[[ $quick -eq 1 ]] && steps=400 warm=50
run() { # name kernel args... (gpu_md_bench)
    local name=$1 k=$2
    shift 2
    local t=$(date +%s)
    HALOX_GPU_NB_KERNEL=$k timeout 120 "$bench" "$@" --json "$RES/$name.json" \
        > "$RES/logs/$name.log" 2>&1
    say "$name (kernel $k): rc $? $(($(date +%s) - t)) s"
}
# 1. the kernels at 45k, with and without the rolling prune
for k in ref table comb; do
    run "nb_${k}_45k" $k --atoms 45000 --steps $steps --warmup $warm --configs 20:0,20:4,20:8,40:4
done
# 2. the larger systems, default kernel
run "nb_auto_big" auto --atoms 180000,360000 --steps $((steps / 2)) --warmup $warm \
    --configs 20:0,20:4,20:8
# 3. the engine: the issue's figure (one rank: the gpu backend needs the gpu-mpi halo)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}
if [[ -n $halox ]]; then
    for kp in ref:0 auto:0 auto:4 auto:8; do
        k=${kp%:*} parts=${kp#*:} name=md_${kp%:*}_p${kp#*:}
        t=$(date +%s)
        HALOX_GPU_NB_KERNEL=$k HALOX_GPU_PRUNE_PARTS=$parts timeout 150 mpirun --allow-run-as-root \
            -np 1 -x HALOX_GPU_NB_KERNEL -x HALOX_GPU_PRUNE_PARTS -x LD_LIBRARY_PATH "$halox" bench md \
            --atoms 45000,180000,360000 --backends gpu --steps $steps --warmup $warm \
            -o "$RES/$name.json" > "$RES/logs/$name.log" 2>&1
        say "$name: rc $? $(($(date +%s) - t)) s: $(grep -h "error" "$RES/logs/$name.log" | head -2)"
    done
else
    say "no halox program found in $build"
fi

# table last: kernel time, evaluations/s, step, ns/day per run
python3 - "$RES" << 'EOF' | tee -a "$OUT/summary.txt"
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
cp "$OUT/summary.txt" "$RES/summary.txt"
tar -C "$(dirname "$RES")" -czf "$OUT/nb_variants.tar.gz" "$(basename "$RES")"
say "results: $OUT/nb_variants.tar.gz ($(du -k "$OUT/nb_variants.tar.gz" | cut -f1) KB)"

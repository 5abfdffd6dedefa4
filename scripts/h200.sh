#!/usr/bin/env bash
# The GPU halo work on the H200 machine in one call: build, every GPU test (ctest -L gpu, 2/4/8
# PEs on the one GPU under MPS), compute-sanitizer on the single-process GPU tests, the exchange
# benchmark (2x2x2 on 8 PEs and 2x2x1 on 4 PEs, 11k atoms per domain) and its two series
# (atoms per domain 1k-100k; pulses 1D/2D/3D), then a short table.
#
#   scripts/h200.sh [PHASE ...]      phases: build test sanitize bench series (default: all)
#
# Results (JSON, logs) go to $OUT when set (the device machine's return folder), otherwise to
# bench/results/. Every step has a time limit, so a hang costs minutes, not the session.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build-h200}
RESULTS=${OUT:-$ROOT/bench/results}
LOGS=$RESULTS/h200-logs
mkdir -p "$RESULTS" "$LOGS"
PHASES=${*:-build test sanitize bench series}
NP=$(nproc)

# NVLink multicast stays off everywhere (shared/DEVICE.md); MPS lets the PEs run concurrently.
export NVSHMEM_DISABLE_NVLS=1
export CUDA_MPS_PIPE_DIRECTORY=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/mps_pipe}
export CUDA_MPS_LOG_DIRECTORY=${CUDA_MPS_LOG_DIRECTORY:-/tmp/mps_log}
NVSHMEM_LIB=$(python3 -c "import nvidia.nvshmem as m; print(m.__path__[0])" 2>/dev/null)/lib
export NVSHMEM_BOOTSTRAP_MPI_PLUGIN=${NVSHMEM_BOOTSTRAP_MPI_PLUGIN:-$NVSHMEM_LIB/nvshmem_bootstrap_mpi.so.3}
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none
        -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x NVSHMEM_DISABLE_NVLS
        -x NVSHMEM_BOOTSTRAP_MPI_PLUGIN -x HALOX_BENCH_COMMAND)

declare -a SUMMARY=()
note() { SUMMARY+=("$1"); echo "== $1"; }

mps_started=0
start_mps() {
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    if nvidia-cuda-mps-control -d 2>/dev/null; then
        mps_started=1
        note "MPS daemon started ($CUDA_MPS_PIPE_DIRECTORY)"
    else
        note "MPS daemon not started (already running?)"
    fi
}
stop_mps() {
    if [ "$mps_started" = 1 ]; then
        echo quit | nvidia-cuda-mps-control
        mps_started=0
    fi
}
trap stop_mps EXIT

has() { case " $PHASES " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null |
    sed 's/^/gpu: /'

if has build; then
    t0=$(date +%s)
    gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
    if timeout 400 cmake -S "$ROOT" -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
            -DHALOX_WERROR=ON >"$LOGS/configure.log" 2>&1 &&
        timeout 400 cmake --build "$BUILD" -j "$NP" >"$LOGS/build.log" 2>&1; then
        note "build: ok ($(($(date +%s) - t0)) s; nvshmem: $("$BUILD/halox" version | awk '/nvshmem/{print $2}'))"
    else
        note "build: FAILED (see $LOGS/build.log)"; tail -30 "$LOGS/build.log"; exit 1
    fi
fi

start_mps

if has test; then
    (cd "$BUILD" && timeout 480 ctest -L gpu --output-on-failure --timeout 300 \
        >"$LOGS/ctest-gpu.log" 2>&1)
    rc=$?
    grep -E "tests passed|tests failed|Test +#|\*\*\*" "$LOGS/ctest-gpu.log" | sed 's/^ *//' |
        grep -E "Passed|Failed|Skipped|Timeout|Exception|tests" | head -40
    note "ctest -L gpu: $(grep -E 'tests passed' "$LOGS/ctest-gpu.log" | sed 's/^ *//') (rc $rc)"
fi

if has sanitize; then
    for tool in memcheck racecheck synccheck; do
        for t in test_gpu_halo_kernels test_gpu_device; do
            log="$LOGS/sanitizer-$tool-$t.log"
            timeout 240 compute-sanitizer --tool "$tool" --error-exitcode 9 \
                "$BUILD/tests/$t" >"$log" 2>&1
            rc=$?
            summ=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -1)
            note "compute-sanitizer $tool $t: rc $rc ${summ:-no summary line}"
        done
    done
fi

bench() { # name np args...
    local name=$1 np=$2; shift 2
    local cmd=("${MPIRUN[@]}" -np "$np" "$BUILD/halox" bench exchange "$@"
               -o "$RESULTS/$name.json")
    export HALOX_BENCH_COMMAND="${cmd[*]}"
    timeout 300 "${cmd[@]}" >"$LOGS/$name.log" 2>&1
    local rc=$?
    grep -E "us/step|error|skipped" "$LOGS/$name.log"
    note "bench $name: rc $rc -> $RESULTS/$name.json"
}

if has bench; then
    bench exchange_2x2x2_8pe_11k 8 --dd 2x2x2 --atoms-per-domain 11000 --steps 2000 --warmup 200 \
        --backends gpu-mpi,gpu-direct,nvshmem,nvshmem-p2p,nvshmem-network,nvshmem-bulk,nvshmem-graph
    bench exchange_2x2x1_4pe_11k 4 --dd 2x2x1 --atoms-per-domain 11000 --steps 2000 --warmup 200 \
        --backends gpu-mpi,gpu-direct,nvshmem,nvshmem-p2p,nvshmem-network,nvshmem-bulk,nvshmem-graph
fi

if has series; then
    bench exchange_series_atoms_2x2x2 8 --dd 2x2x2 \
        --atoms-per-domain 1000,3000,11000,30000,100000 --steps 500 --warmup 50 \
        --backends gpu-mpi,gpu-direct,nvshmem,nvshmem-bulk
    bench exchange_series_pulses_8pe 8 --dd 8x1x1,4x2x1,2x2x2 --atoms-per-domain 11000 \
        --steps 1000 --warmup 100 --backends gpu-mpi,gpu-direct,nvshmem
fi

stop_mps

# The table: every run of this call's JSON files, and the paper's ratios.
python3 - "$RESULTS" <<'EOF'
import glob, json, os, sys
rows = []
for f in sorted(glob.glob(os.path.join(sys.argv[1], "exchange_*.json"))):
    try:
        d = json.load(open(f))
    except Exception as e:
        print(f"{f}: unreadable ({e})"); continue
    for r in d.get("runs", []):
        rows.append((os.path.basename(f)[:-5], r))
if rows:
    print(f"\n{'file':34} {'backend':16} {'dd':7} {'at/dom':>7} {'P':>2} {'L':>2} "
          f"{'dev us':>8} {'wall us':>8} {'floor':>6} {'us/lvl':>6}")
    for name, r in rows:
        dd = "x".join(str(v) for v in r["dd"])
        fl = r.get("floor_us"); pl = r.get("us_per_level")
        print(f"{name[:34]:34} {r['backend']:16} {dd:7} {r['atoms_per_domain']:7d} "
              f"{r['pulses']:2d} {r['dependency_levels']:2d} {r['exchange_us']:8.1f} "
              f"{r['us_per_step']:8.1f} {fl if fl is None else round(fl,1)!s:>6} "
              f"{pl if pl is None else round(pl,1)!s:>6}")
    print("\nspeed-up of nvshmem (device median) over the baselines:")
    key = lambda r: (tuple(r["dd"]), r["atoms_per_domain"])
    by = {}
    for name, r in rows:
        by.setdefault((name,) + key(r), {})[r["backend"]] = r["exchange_us"]
    for k, v in by.items():
        if "nvshmem" in v and v["nvshmem"] > 0:
            parts = [f"{b} {v[b] / v['nvshmem']:.1f}x" for b in ("gpu-mpi", "gpu-direct") if b in v]
            print(f"  {k[0][:34]:34} {'x'.join(map(str, k[1])):7} {k[2]:7d}: " + ", ".join(parts)
                  + "   (targets: gpu-mpi >= 10x, gpu-direct >= 3x)")
EOF
echo
printf '%s\n' "${SUMMARY[@]}"

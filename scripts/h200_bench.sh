# The benchmark list of scripts/h200.sh (sourced there; not a program of its own). Variables:
# RES (JSON goes here), BUILD, HALOX (the program), QUICK (1: shorter runs), OUT; functions: say.
#
#   bench NAME COMMAND...   run COMMAND in $BUILD, log to logs/bench_NAME.log, report its last
#                           line (the benchmark's summary) and the exit status.
bench() {
    local name=$1
    shift
    if [[ $(left) -lt 20 ]]; then
        say "  $name: skipped (the call's time is spent)"
        return
    fi
    local t0
    t0=$(date +%s)
    (cd "$BUILD" && "$@") > "$OUT/logs/bench_$name.log" 2>&1
    local rc=$?
    say "  $name: rc $rc, $(($(date +%s) - t0)) s: $(tail -1 "$OUT/logs/bench_$name.log")"
}

mpi=(mpirun --allow-run-as-root --oversubscribe -x CUDA_MPS_PIPE_DIRECTORY
    -x CUDA_MPS_LOG_DIRECTORY -x NVSHMEM_DISABLE_NVLS -x NVSHMEM_BOOTSTRAP_MPI_PLUGIN
    -x LD_LIBRARY_PATH -x HALOX_GIT_REVISION)

# halox bench --suite paper (scripts/h200.sh --bench-suite sets SUITE=1): the whole series that
# fits, within what is left of the call, instead of the fixed list below. The suite starts mpirun
# itself (2/4/8 ranks share the GPU under MPS, started by h200.sh); it gets the environment of
# this script through the launcher below. Results, run files, logs and the report go to
# $RES/suite; box cache in /tmp/halox-box-cache (kept while the machine stays warm). A second
# call with the same $RES/suite (carried back) resumes.
if [[ ${SUITE:-0} -eq 1 ]]; then
    sbudget=$(($(left) - ${HALOX_SUITE_MARGIN:-40}))
    if [[ $sbudget -lt 60 ]]; then
        say "  suite: skipped (only $(left) s left in the call)"
        return 0
    fi
    export HALOX_MPIRUN="mpirun --allow-run-as-root --oversubscribe --bind-to none \
-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x NVSHMEM_DISABLE_NVLS \
-x NVSHMEM_BOOTSTRAP_MPI_PLUGIN -x LD_LIBRARY_PATH -x HALOX_GIT_REVISION -x OMP_NUM_THREADS \
-x HALOX_BENCH_COMMAND"
    quick_args=()
    [[ $QUICK -eq 1 ]] && quick_args=(--quick)
    t0=$(date +%s)
    # the outer timeout only guards a hang: the suite itself starts no run that would not fit
    (cd "$BUILD" && timeout $((sbudget + 30)) "$HALOX" bench --suite paper "${quick_args[@]}" \
        -o "$RES/suite" --time-budget "$sbudget" --cache /tmp/halox-box-cache \
        ${HALOX_SUITE_ARGS:-}) > "$OUT/logs/bench_suite.log" 2>&1
    rc=$?
    say "  suite: rc $rc, $(($(date +%s) - t0)) s (budget $sbudget s)"
    grep -E "^halox bench suite: [0-9]+ runs done|^report:" "$OUT/logs/bench_suite.log" |
        tee -a "$OUT/summary.txt"
    [[ -f $RES/suite/REPORT.md ]] && sed -n '/^## Headline/,/^## /p' "$RES/suite/REPORT.md" |
        head -60 | tee -a "$OUT/summary.txt"
    return 0
fi

# (filled as the GPU benchmarks land)

# The single-GPU MD step (issue 12): SPC/E 45k/180k/360k atoms, three list configurations
# (nstlist:prune parts), CUDA graph replay; the table is the log's end
gsteps=4000 gwarm=300
[[ $QUICK -eq 1 ]] && gsteps=600 gwarm=100
bench gpu_md timeout $(($(left) / 3)) "$BUILD/tests/gpu_md_bench" --atoms 45000,180000,360000 \
    --steps $gsteps --warmup $gwarm --configs 100:4,40:4,20:0 --json "$RES/gpu_md.json" \
    --git-revision "$HALOX_GIT_REVISION"

# GPU halo exchange (issue 11): every backend side by side, the paper's smallest per-GPU size
# hb SERIES LIMIT NAME NP ARGS...: halox bench SERIES on NP ranks (at most LIMIT s), results in
# $RES/NAME.json, the command it stands for recorded in them
hb() {
    local series=$1 limit=$2 name=$3 np=$4
    shift 4
    export HALOX_BENCH_COMMAND="mpirun -np $np halox bench $series $* -o $name.json"
    bench "$name" timeout "$limit" "${mpi[@]}" -x HALOX_BENCH_COMMAND --bind-to none -np "$np" \
        "$HALOX" bench "$series" "$@" -o "$RES/$name.json"
}
xb() { hb exchange 150 "$@"; } # name np args...
steps=2000 warm=200
[[ $QUICK -eq 1 ]] && steps=300 warm=50
xb exchange_2x2x2_8pe_11k 8 --dd 2x2x2 --atoms-per-domain 11000 --steps $steps --warmup $warm \
    --backends gpu-mpi,gpu-direct,nvshmem,nvshmem-p2p,nvshmem-network,nvshmem-bulk,nvshmem-graph
xb exchange_2x2x1_4pe_11k 4 --dd 2x2x1 --atoms-per-domain 11000 --steps $steps --warmup $warm \
    --backends gpu-mpi,gpu-direct,nvshmem,nvshmem-p2p,nvshmem-network,nvshmem-bulk,nvshmem-graph
if [[ $QUICK -eq 0 ]]; then
    xb exchange_series_atoms_2x2x2 8 --dd 2x2x2 \
        --atoms-per-domain 1000,3000,11000,30000,100000 --steps 500 --warmup 50 \
        --backends gpu-mpi,gpu-direct,nvshmem,nvshmem-bulk
    xb exchange_series_pulses_8pe 8 --dd 8x1x1,4x2x1,2x2x2 --atoms-per-domain 11000 \
        --steps 1000 --warmup 100 --backends gpu-mpi,gpu-direct,nvshmem
fi
python3 "$(dirname "${BASH_SOURCE[0]}")/h200_table.py" "$RES" 2>&1 | tee -a "$OUT/summary.txt"

# The MD step through the engine (issues 12 and 13): one GPU alone, then the decomposed step on
# 4 and 8 ranks of the one GPU under MPS, every halo backend side by side (halox bench md)
mb() { hb md 200 "$@"; } # name np args...
msteps=3000 mwarm=300
[[ $QUICK -eq 1 ]] && msteps=600 mwarm=100
mb md_1gpu 1 --atoms 45000,180000,360000 --backends gpu --steps $msteps --warmup $mwarm
mb md_dd_4rank_45k 4 --atoms 45000 --dd 4x1x1,2x2x1 --backends gpu-mpi,gpu-direct,nvshmem \
    --steps $msteps --warmup $mwarm
mb md_dd_8rank_45k 8 --atoms 45000 --dd 2x2x2 --backends gpu-mpi,gpu-direct,nvshmem \
    --steps $msteps --warmup $mwarm
[[ $QUICK -eq 0 ]] && mb md_dd_4rank_180k 4 --atoms 180000 --dd 4x1x1 \
    --backends gpu-mpi,gpu-direct,nvshmem --steps 1000 --warmup 100
for f in "$RES"/md_*.json; do
    [[ -e $f ]] && grep -h "us/step" "$OUT/logs/bench_$(basename "$f" .json).log" | tee -a "$OUT/summary.txt"
done

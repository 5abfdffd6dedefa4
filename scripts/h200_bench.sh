# The benchmark list of scripts/h200.sh (sourced there; not a program of its own). Variables:
# RES (JSON goes here), BUILD, HALOX (the program), QUICK (1: shorter runs), OUT; functions: say.
#
#   bench NAME COMMAND...   run COMMAND in $BUILD, log to logs/bench_NAME.log, report its last
#                           line (the benchmark's summary) and the exit status.
bench() {
    local name=$1
    shift
    local t0
    t0=$(date +%s)
    (cd "$BUILD" && "$@") > "$OUT/logs/bench_$name.log" 2>&1
    local rc=$?
    say "  $name: rc $rc, $(($(date +%s) - t0)) s: $(tail -1 "$OUT/logs/bench_$name.log")"
}

mpi=(mpirun --allow-run-as-root --oversubscribe -x CUDA_MPS_PIPE_DIRECTORY
    -x CUDA_MPS_LOG_DIRECTORY -x NVSHMEM_DISABLE_NVLS -x NVSHMEM_BOOTSTRAP_MPI_PLUGIN
    -x LD_LIBRARY_PATH)

# (filled as the GPU benchmarks land)

# GPU halo exchange (issue 11): every backend side by side, the paper's smallest per-GPU size
xb() { # name np args...
    local name=$1 np=$2
    shift 2
    export HALOX_BENCH_COMMAND="mpirun -np $np halox bench exchange $* -o $name.json"
    bench "$name" timeout 300 "${mpi[@]}" -x HALOX_BENCH_COMMAND --bind-to none -np "$np" \
        "$HALOX" bench exchange "$@" -o "$RES/$name.json"
}
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

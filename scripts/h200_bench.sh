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

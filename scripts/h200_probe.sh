# One-off measurements for scripts/h200.sh --exec (sourced there, MPS running): what the NVSHMEM
# exchange's time per dependency level is made of on one GPU shared by several processes.
#
#  1. bench/mps_dispatch on 1, 2, 4, 8 processes: an empty kernel back to back, a one-hop ring
#     signal with a kernel per step and with one persistent kernel;
#  2. the exchange (2x2x1 on 4 PEs, 2x2x2 on 8) and the decomposed MD step (45k, 4x1x1 and 2x2x1
#     on 4 ranks): nvshmem with its device-side waits spinning (backoff 0) and sleeping between
#     polls (HALOX_NVSHMEM_BACKOFF_NS), gpu-direct in the same run as the reference;
#  3. the same with one system fence per thread or per block before a pulse's count
#     (HALOX_NVSHMEM_FENCE), the exchange traced (HALOX_NVSHMEM_TRACE, scripts/nvshmem_trace.py).
#  4. events: the exchange with the device-time event pair around every step and around every
#     100th only (wall time per step over all steps), traced.
# PROBE selects (default "dispatch backoff fence"). Variables from h200.sh: RES, BUILD, HALOX,
# OUT, say, left. PROBE_STEPS shortens the runs.
pmpi=(mpirun --allow-run-as-root --oversubscribe -x CUDA_MPS_PIPE_DIRECTORY
    -x CUDA_MPS_LOG_DIRECTORY -x NVSHMEM_DISABLE_NVLS -x NVSHMEM_BOOTSTRAP_MPI_PLUGIN
    -x LD_LIBRARY_PATH -x HALOX_GIT_REVISION -x HALOX_NVSHMEM_BACKOFF_NS -x HALOX_BENCH_COMMAND
    -x HALOX_NVSHMEM_FENCE -x HALOX_NVSHMEM_TRACE --bind-to none)
probes=${PROBE:-dispatch backoff fence}
probe() { # name timeout command...
    local name=$1 to=$2
    shift 2
    if [[ $(left) -lt $((to / 2)) ]]; then
        say "  $name: skipped (the call's time is spent)"
        return
    fi
    local t0
    t0=$(date +%s)
    (cd "$BUILD" && timeout "$to" "$@") > "$OUT/logs/probe_$name.log" 2>&1
    say "  $name: rc $?, $(($(date +%s) - t0)) s"
}
ps=${PROBE_STEPS:-1000}
[[ $probes == *dispatch* ]] && for np in 1 2 4 8; do
    probe mps_dispatch_$np 60 "${pmpi[@]}" -np $np "$BUILD/tests/mps_dispatch" --steps 20000 \
        --launches 20000 --json "$RES/mps_dispatch_${np}pe.json"
    tail -4 "$OUT/logs/probe_mps_dispatch_$np.log" | sed 's/^/    /' | tee -a "$OUT/summary.txt"
done
[[ $probes == *backoff* ]] && for b in 0 256 1024; do
    export HALOX_NVSHMEM_BACKOFF_NS=$b
    for g in 2x2x1:4 2x2x2:8; do
        dd=${g%:*} np=${g#*:}
        export HALOX_BENCH_COMMAND="HALOX_NVSHMEM_BACKOFF_NS=$b mpirun -np $np halox bench exchange --dd $dd --atoms-per-domain 11000 --steps $((2 * ps)) --warmup 200 --backends gpu-direct,nvshmem"
        probe exchange_${dd}_backoff$b 90 "${pmpi[@]}" -np $np "$HALOX" bench exchange --dd $dd \
            --atoms-per-domain 11000 --steps $((2 * ps)) --warmup 200 --backends gpu-direct,nvshmem \
            -o "$RES/probe_exchange_${dd}_backoff$b.json"
        grep -E "^ *(gpu-direct|nvshmem)" "$OUT/logs/probe_exchange_${dd}_backoff$b.log" |
            sed "s/^/    backoff $b $dd: /" | tee -a "$OUT/summary.txt"
    done
    export HALOX_BENCH_COMMAND="HALOX_NVSHMEM_BACKOFF_NS=$b mpirun -np 4 halox bench md --atoms 45000 --dd 4x1x1,2x2x1 --backends gpu-direct,nvshmem --steps $((2 * ps)) --warmup 200"
    probe md_45k_4rank_backoff$b 150 "${pmpi[@]}" -np 4 "$HALOX" bench md --atoms 45000 \
        --dd 4x1x1,2x2x1 --backends gpu-direct,nvshmem --steps $((2 * ps)) --warmup 200 \
        -o "$RES/probe_md_45k_4rank_backoff$b.json"
    grep -h "us/step" "$OUT/logs/probe_md_45k_4rank_backoff$b.log" | sed "s/^/    backoff $b: /" |
        tee -a "$OUT/summary.txt"
done
unset HALOX_NVSHMEM_BACKOFF_NS
mkdir -p "$OUT/logs/traces"
[[ $probes == *fence* ]] && for fe in thread block; do
    export HALOX_NVSHMEM_FENCE=$fe
    for g in 2x2x1:4 2x2x2:8; do
        dd=${g%:*} np=${g#*:}
        export HALOX_NVSHMEM_TRACE=$OUT/logs/traces/x_${dd}_$fe
        export HALOX_BENCH_COMMAND="HALOX_NVSHMEM_FENCE=$fe HALOX_NVSHMEM_TRACE=x_${dd}_$fe mpirun -np $np halox bench exchange --dd $dd --atoms-per-domain 11000 --steps $((2 * ps)) --warmup 200 --backends gpu-direct,nvshmem"
        probe exchange_${dd}_fence_$fe 90 "${pmpi[@]}" -np $np "$HALOX" bench exchange --dd $dd \
            --atoms-per-domain 11000 --steps $((2 * ps)) --warmup 200 --backends gpu-direct,nvshmem \
            -o "$RES/probe_exchange_${dd}_fence_$fe.json"
        grep -E "^ *(gpu-direct|nvshmem)" "$OUT/logs/probe_exchange_${dd}_fence_$fe.log" |
            sed "s/^/    fence $fe $dd: /" | tee -a "$OUT/summary.txt"
        python3 "$(dirname "${BASH_SOURCE[0]}")/nvshmem_trace.py" "$HALOX_NVSHMEM_TRACE.0" \
            --json "$RES/trace_exchange_${dd}_fence_$fe.json" 2>&1 | sed 's/^/    /' |
            tee -a "$OUT/summary.txt"
    done
    unset HALOX_NVSHMEM_TRACE
    export HALOX_BENCH_COMMAND="HALOX_NVSHMEM_FENCE=$fe mpirun -np 4 halox bench md --atoms 45000 --dd 4x1x1,2x2x1 --backends gpu-direct,nvshmem --steps $((2 * ps)) --warmup 200"
    probe md_45k_4rank_fence_$fe 150 "${pmpi[@]}" -np 4 "$HALOX" bench md --atoms 45000 \
        --dd 4x1x1,2x2x1 --backends gpu-direct,nvshmem --steps $((2 * ps)) --warmup 200 \
        -o "$RES/probe_md_45k_4rank_fence_$fe.json"
    grep -h "us/step" "$OUT/logs/probe_md_45k_4rank_fence_$fe.log" | sed "s/^/    fence $fe: /" |
        tee -a "$OUT/summary.txt"
done
unset HALOX_NVSHMEM_FENCE HALOX_NVSHMEM_TRACE HALOX_BENCH_COMMAND
[[ $probes == *events* ]] && for ev in 1 100; do
    for g in 2x2x1:4 2x2x2:8; do
        dd=${g%:*} np=${g#*:}
        export HALOX_NVSHMEM_TRACE=$OUT/logs/traces/x_${dd}_ev$ev
        export HALOX_BENCH_COMMAND="HALOX_NVSHMEM_TRACE=x_${dd}_ev$ev mpirun -np $np halox bench exchange --dd $dd --atoms-per-domain 11000 --steps $((2 * ps)) --warmup 200 --event-every $ev --backends gpu-mpi,gpu-direct,nvshmem"
        probe exchange_${dd}_ev$ev 90 "${pmpi[@]}" -np $np "$HALOX" bench exchange --dd $dd \
            --atoms-per-domain 11000 --steps $((2 * ps)) --warmup 200 --event-every $ev \
            --backends gpu-mpi,gpu-direct,nvshmem -o "$RES/probe_exchange_${dd}_ev$ev.json"
        grep -E "^ *(gpu-mpi|gpu-direct|nvshmem)" "$OUT/logs/probe_exchange_${dd}_ev$ev.log" |
            sed "s/^/    events every $ev $dd: /" | tee -a "$OUT/summary.txt"
        python3 "$(dirname "${BASH_SOURCE[0]}")/nvshmem_trace.py" "$HALOX_NVSHMEM_TRACE.0" \
            --json "$RES/trace_exchange_${dd}_ev$ev.json" 2>&1 | sed 's/^/    /' |
            tee -a "$OUT/summary.txt"
    done
done
unset HALOX_NVSHMEM_TRACE HALOX_BENCH_COMMAND

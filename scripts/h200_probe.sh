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
# PROBE selects (default "dispatch backoff fence"; also "owner", "waitcost", "floors", "events", "chunk", "sync", "xq", "inject", "ddtests", "prune", "drift", "mps", "final", "repeat", "cli", "mixture", "ncu", "ncusec", "ab", "nstlist", "autonstlist",
# "md1gpu", "sanq", "stages", "roofline", "roofab", "roofab2", "onemd", "gpusearch", "nbvar", "ddab" (see there)). Variables from h200.sh: RES, BUILD, HALOX,
# OUT, say, left. PROBE_STEPS shortens the runs.
pmpi=(mpirun --allow-run-as-root --oversubscribe -x CUDA_MPS_PIPE_DIRECTORY
    -x CUDA_MPS_LOG_DIRECTORY -x NVSHMEM_DISABLE_NVLS -x NVSHMEM_BOOTSTRAP_MPI_PLUGIN
    -x LD_LIBRARY_PATH -x HALOX_GIT_REVISION -x HALOX_NVSHMEM_BACKOFF_NS -x HALOX_BENCH_COMMAND
    -x HALOX_NVSHMEM_FENCE -x HALOX_NVSHMEM_TRACE -x HALOX_NVSHMEM_CHUNK -x HALOX_NVSHMEM_SCOPE -x HALOX_NVSHMEM_PDL
    -x CUDA_MPS_ACTIVE_THREAD_PERCENTAGE --bind-to none)
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
# ncu_kernels NAME TIMEOUT LABEL "KERNELS" SKIP COUNT STEPS [VAR=value...]: Nsight Compute on
# gpu_md_bench (45k atoms, no graph, $itol the inner tolerance) with the settings given, launches
# SKIP+1 .. SKIP+COUNT of the named kernels (space-separated). Writes $OUT/logs/NAME.txt (every
# section), NAME_raw.csv, NAME_<kernel>_sass.csv (per instruction) and to the summary, LABEL
# before each line, each kernel's top stalls (scripts/ncu_stalls.py) and its key figures; the
# report itself is removed (too large to bring back). One function for roofab and roofab2.
ncu_kernels() {
    local name=$1 to=$2 label=$3 kernels=$4 skip=$5 count=$6 steps=$7
    shift 7
    local rep=$OUT/logs/$name.ncu-rep k
    probe "$name" "$to" env "$@" ncu --clock-control none --set full --import-source no \
        -k "regex:^(${kernels// /|})\$" --launch-skip "$skip" --launch-count "$count" \
        -o "$OUT/logs/$name" "$BUILD/tests/gpu_md_bench" --atoms 45000 --steps "$steps" \
        --warmup 0 --configs "20:4:$itol" --no-graph
    [[ -f $rep ]] || return 0
    ncu -i "$rep" --print-details all > "$OUT/logs/$name.txt" 2>&1
    ncu -i "$rep" --page raw --csv > "$OUT/logs/${name}_raw.csv" 2>&1
    for k in $kernels; do
        ncu -i "$rep" -k "regex:^$k\$" --page source --csv --print-source sass \
            > "$OUT/logs/${name}_${k}_sass.csv" 2>&1 || true
        python3 "$here/scripts/ncu_stalls.py" "$OUT/logs/${name}_${k}_sass.csv" 6 2>&1 |
            head -4 | cut -c1-150 | sed "s/^/    $label $k: /" | tee -a "$OUT/summary.txt"
    done
    grep -E "^  [a-z_]|^  void|Duration|Achieved Occupancy|Registers Per|Issue Slots Busy|Executed Ipc Active|Instructions Executed" \
        "$OUT/logs/$name.txt" | cut -c1-130 | sed "s/^/    $label: /" | tee -a "$OUT/summary.txt"
    rm -f "$rep"
}
mkdir -p "$OUT/logs/traces"
# One exchange run of a probe, 11k atoms per domain: xrun NAME DD NP BACKENDS LABEL TRACE ENVS
# [bench exchange arguments...]. Files probe_exchange_NAME.{json,log}; LABEL prefixes its lines
# in the summary; TRACE 1: traced (HALOX_NVSHMEM_TRACE, a test hook: run by halox-test, the
# program built with the NVSHMEM module's hooks), the step's breakdown in the summary;
# ENVS: the settings of the run (already exported by the caller), recorded in its command.
xrun() {
    local name=$1 dd=$2 np=$3 backends=$4 label=$5 trace=$6 envs=$7 prog=$HALOX
    shift 7
    if [[ $trace -eq 1 ]]; then
        export HALOX_NVSHMEM_TRACE=$OUT/logs/traces/x_$name
        prog=$HALOX-test
    else
        unset HALOX_NVSHMEM_TRACE
    fi
    export HALOX_BENCH_COMMAND="${envs:+$envs }mpirun -np $np halox bench exchange --dd $dd --atoms-per-domain 11000 --backends $backends $*"
    probe exchange_$name 90 "${pmpi[@]}" -np "$np" "$prog" bench exchange --dd "$dd" \
        --atoms-per-domain 11000 --backends "$backends" "$@" -o "$RES/probe_exchange_$name.json"
    grep -E "^ *(gpu-mpi|gpu-direct|nvshmem)|error" "$OUT/logs/probe_exchange_$name.log" |
        sed "s/^/    $label $dd: /" | tee -a "$OUT/summary.txt"
    if [[ $trace -eq 1 ]]; then
        python3 "$(dirname "${BASH_SOURCE[0]}")/nvshmem_trace.py" "$HALOX_NVSHMEM_TRACE.0" \
            --json "$RES/trace_exchange_$name.json" 2>&1 | sed 's/^/    /' |
            grep -E "period|skew|span|gap|pack|dep|hop|accum|PEs" | tee -a "$OUT/summary.txt"
        unset HALOX_NVSHMEM_TRACE
    fi
    unset HALOX_BENCH_COMMAND
}
[[ $probes == *dispatch* ]] && for np in 1 2 4 8; do
    probe mps_dispatch_$np 60 "${pmpi[@]}" -np $np "$BUILD/tests/mps_dispatch" --steps 20000 \
        --launches 20000 --json "$RES/mps_dispatch_${np}pe.json"
    tail -4 "$OUT/logs/probe_mps_dispatch_$np.log" | sed 's/^/    /' | tee -a "$OUT/summary.txt"
done
[[ $probes == *backoff* ]] && for b in 0 256 1024; do
    export HALOX_NVSHMEM_BACKOFF_NS=$b
    for g in 2x2x1:4 2x2x2:8; do
        dd=${g%:*} np=${g#*:}
        xrun ${dd}_backoff$b $dd $np gpu-direct,nvshmem "backoff $b" 0 \
            "HALOX_NVSHMEM_BACKOFF_NS=$b" --steps $((2 * ps)) --warmup 200
    done
    export HALOX_BENCH_COMMAND="HALOX_NVSHMEM_BACKOFF_NS=$b mpirun -np 4 halox bench md --atoms 45000 --dd 4x1x1,2x2x1 --backends gpu-direct,nvshmem --steps $((2 * ps)) --warmup 200"
    probe md_45k_4rank_backoff$b 150 "${pmpi[@]}" -np 4 "$HALOX" bench md --atoms 45000 \
        --dd 4x1x1,2x2x1 --backends gpu-direct,nvshmem --steps $((2 * ps)) --warmup 200 \
        -o "$RES/probe_md_45k_4rank_backoff$b.json"
    grep -h "us/step" "$OUT/logs/probe_md_45k_4rank_backoff$b.log" | sed "s/^/    backoff $b: /" |
        tee -a "$OUT/summary.txt"
done
unset HALOX_NVSHMEM_BACKOFF_NS
[[ $probes == *fence* ]] && for fe in thread block; do
    export HALOX_NVSHMEM_FENCE=$fe
    for g in 2x2x1:4 2x2x2:8; do
        dd=${g%:*} np=${g#*:}
        xrun ${dd}_fence_$fe $dd $np gpu-direct,nvshmem "fence $fe" 1 "HALOX_NVSHMEM_FENCE=$fe" \
            --steps $((2 * ps)) --warmup 200
    done
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
        xrun ${dd}_ev$ev $dd $np gpu-mpi,gpu-direct,nvshmem "events every $ev" 1 "" \
            --steps $((2 * ps)) --warmup 200 --batch $ev
    done
done
# 4b. chunk: nvshmem with fewer, longer blocks per pulse (HALOX_NVSHMEM_CHUNK atoms per block;
#     the default starts at 1024), event pair around every 100th step, traced.
[[ $probes == *chunk* ]] && for c in ${CHUNKS:-4096 16384}; do
    for g in 2x2x1:4 2x2x2:8; do
        dd=${g%:*} np=${g#*:}
        export HALOX_NVSHMEM_CHUNK=$c
        xrun ${dd}_chunk$c $dd $np nvshmem "chunk $c" 1 "HALOX_NVSHMEM_CHUNK=$c" \
            --steps $((2 * ps)) --warmup 200 --batch 100
    done
done
unset HALOX_NVSHMEM_CHUNK
# 4c. sync: the fused exchange's ordering and launch variants side by side, batches of 20 steps,
#     traced: NAME:FENCE:SCOPE:PDL (HALOX_NVSHMEM_FENCE, HALOX_NVSHMEM_SCOPE, HALOX_NVSHMEM_PDL).
[[ $probes == *sync* ]] && for v in ${SYNC_VARIANTS:-old:block:sys:0 pdl:block:sys:1 rel:release:sys:0 gpu:release:auto:0 new:release:auto:1}; do
    IFS=: read -r name fe sc pd <<< "$v"
    for g in 2x2x1:4 2x2x2:8; do
        dd=${g%:*} np=${g#*:}
        bk=gpu-direct,nvshmem
        [[ $name == new ]] && bk=gpu-mpi,gpu-direct,nvshmem,nvshmem-graph
        export HALOX_NVSHMEM_FENCE=$fe HALOX_NVSHMEM_SCOPE=$sc HALOX_NVSHMEM_PDL=$pd
        xrun ${dd}_$name $dd $np $bk "$name" 1 \
            "HALOX_NVSHMEM_FENCE=$fe HALOX_NVSHMEM_SCOPE=$sc HALOX_NVSHMEM_PDL=$pd" \
            --steps $((2 * ps)) --warmup 200
    done
done
unset HALOX_NVSHMEM_FENCE HALOX_NVSHMEM_SCOPE HALOX_NVSHMEM_PDL
# 4d. xq: the exchange untraced, every baseline beside nvshmem, XQ_REPEATS runs per grid
[[ $probes == *xq* ]] && for rep in $(seq 1 "${XQ_REPEATS:-2}"); do
    for g in 2x2x1:4 2x2x2:8; do
        dd=${g%:*} np=${g#*:}
        xrun ${dd}_xq$rep $dd $np gpu-mpi,gpu-direct,nvshmem "run $rep" 0 "" \
            --steps $((4 * ps)) --warmup 400
    done
done
# 4e. inject: the GPU halo tests (linked with the NVSHMEM module's test hooks, which read
#     HALOX_TEST_INJECT on rank 0): each HALOX_TEST_INJECT mode must fail them.
[[ $probes == *inject* ]] && for mode in x-early f-early; do
    t0=$(date +%s)
    (cd "$BUILD" && HALOX_TEST_INJECT=$mode timeout 120 ctest -R "test_gpu_halo_np4|test_gpu_halo_stress_np4" \
        --output-on-failure --timeout 60) > "$OUT/logs/probe_inject_$mode.log" 2>&1
    say "  inject $mode: ctest rc $? ($(($(date +%s) - t0)) s): $(grep -E "tests passed|tests failed" "$OUT/logs/probe_inject_$mode.log")"
    grep -m4 -E "FAIL|mismatch|differs|step [0-9]" "$OUT/logs/probe_inject_$mode.log" | cut -c1-200 |
        sed 's/^/    /' | tee -a "$OUT/summary.txt"
done
# 5a. ddtests: the GPU MD tests with the rolling prune on (4 parts, inner tolerance
#     PRUNE_TOL, default 0.0005), and test_gpu_dd_md's drift check shown to fail when the
#     decomposed runs lose their buffer (HALOX_TEST_DD_RLIST=1.0, 4 ranks).
if [[ $probes == *ddtests* ]]; then
    probe dd_md_inject 120 "${pmpi[@]}" -x HALOX_TEST_DD_RLIST=1.0 -np 4 "$BUILD/tests/test_gpu_dd_md"
    grep -hE "fault|NVE|stress|FAIL|cases" "$OUT/logs/probe_dd_md_inject.log" | sed 's/^/    inject: /' |
        tee -a "$OUT/summary.txt"
    t0=$(date +%s)
    (cd "$BUILD" && HALOX_GPU_PRUNE_PARTS=4 HALOX_GPU_PRUNE_TOLERANCE=${PRUNE_TOL:-0.0005} \
        timeout 200 ctest -R "${PRUNE_TESTS:-test_gpu_md\$|test_gpu_ethanol\$|test_gpu_dd_md_np4}" \
        -V --timeout 150) > "$OUT/logs/ctest_prune_on.log" 2>&1
    say "  tests with the prune on ($(($(date +%s) - t0)) s):"
    grep -hE "Test +#[0-9]+:|NVE|drift|FAIL|stress" "$OUT/logs/ctest_prune_on.log" | sed -E 's/^[0-9]+: //' |
        sed 's/^/    /' | tee -a "$OUT/summary.txt"
fi
# 5. prune: what the rolling prune's inner list costs in energy conservation and buys in time.
#    NVE drift of 3000 SPC/E atoms over 25 ps on one GPU (seeds PRUNE_SEEDS, default 1 2) for nstlist:parts:inner
#    tolerance (0: no prune / the run's tolerance), then the pair kernel and step at 45k-360k
#    (tests/gpu_md_bench) and the engine on one GPU (halox bench md) with and without the prune.
#    "drift" runs the drift part alone (PRUNE_DRIFT_CONFIGS): the check of a buffer estimate.
if [[ $probes == *prune* || $probes == *drift* ]]; then
    w3k=$OUT/logs/w3k.gro
    "$HALOX" build water --atoms 3000 -o "$w3k" > /dev/null 2>&1
    say "  NVE drift, 3000 SPC/E atoms, 25 ps on one GPU (kJ/mol/ps per atom):"
    for cfg in ${PRUNE_DRIFT_CONFIGS:-10:0:0 20:0:0 20:4:0.005 20:4:0.0005 20:4:0.00005 40:4:0.0005}; do
        IFS=: read -r nl pp tt <<< "$cfg"
        line="    nstlist $nl parts $pp inner-tol $tt:"
        for seed in ${PRUNE_SEEDS:-1 2}; do
            name=drift_${nl}_${pp}_${tt}_s$seed
            envs=(HALOX_GPU_PRUNE_PARTS=$pp)
            [[ $tt != 0 ]] && envs+=(HALOX_GPU_PRUNE_TOLERANCE=$tt)
            probe "$name" 60 "${pmpi[@]}" -np 1 env "${envs[@]}" "$HALOX" md -c "$w3k" --gpu \
                --steps 12500 --nstlist "$nl" --gen-vel 300 --seed "$seed" --nstenergy 10 \
                -o "$OUT/logs/$name.gro" -g "$OUT/logs/$name.md.log" > /dev/null
            d=$(sed -nE 's/^conserved-energy drift: ([-0-9.e]+).*/\1/p' "$OUT/logs/$name.md.log")
            ri=$(sed -nE 's/.*inner rlist ([0-9.]+) nm.*/\1/p' "$OUT/logs/$name.md.log")
            line="$line ${d:-?}"
        done
        ro=$(sed -nE 's/^ *rlist ([0-9.]+) nm.*/\1/p' "$OUT/logs/$name.md.log" | head -1)
        say "$line (rlist ${ro:-?}, inner rlist ${ri:-none})"
    done
fi
if [[ $probes == *prune* ]]; then
    rev=${HALOX_GIT_REVISION:-unknown}
    probe gpu_md_bench_prune_45k 150 "$BUILD/tests/gpu_md_bench" --atoms 45000 --steps 2000 \
        --warmup 200 --configs 20:0,20:4:0.005,20:4:0.0005,20:4:0.00005,40:4:0.0005,40:8:0.0005 \
        --json "$RES/gpu_md_bench_prune_45k.json" --git-revision "$rev"
    tail -9 "$OUT/logs/probe_gpu_md_bench_prune_45k.log" | sed 's/^/    /' | tee -a "$OUT/summary.txt"
    for pp in 0 4; do
        export HALOX_BENCH_COMMAND="HALOX_GPU_PRUNE_PARTS=$pp HALOX_GPU_PRUNE_TOLERANCE=0.0005 mpirun -np 1 halox bench md --atoms 45000,180000,360000 --backends gpu --steps 1000 --warmup 100"
        probe md_1gpu_prune$pp 200 "${pmpi[@]}" -np 1 env HALOX_GPU_PRUNE_PARTS=$pp \
            HALOX_GPU_PRUNE_TOLERANCE=0.0005 "$HALOX" bench md --atoms 45000,180000,360000 \
            --backends gpu --steps 1000 --warmup 100 -o "$RES/md_1gpu_prune$pp.json"
        grep -h "us/step" "$OUT/logs/probe_md_1gpu_prune$pp.log" | sed "s/^/    prune $pp: /" |
            tee -a "$OUT/summary.txt"
    done
    unset HALOX_BENCH_COMMAND
    probe gpu_md_bench_prune_big 200 "$BUILD/tests/gpu_md_bench" --atoms 180000,360000 \
        --steps 1000 --warmup 100 --configs 20:0,20:4:0.0005,40:4:0.0005 \
        --json "$RES/gpu_md_bench_prune_big.json" --git-revision "$rev"
    tail -8 "$OUT/logs/probe_gpu_md_bench_prune_big.log" | sed 's/^/    /' | tee -a "$OUT/summary.txt"
fi
# 6. mps: the exchange with each PE limited to its share of the multiprocessors
#    (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE = 100 / PEs): does a kernel boundary cost less when the
#    PEs' kernels cannot fill the whole GPU?
[[ $probes == *mps* ]] && for g in 2x2x1:4:25 2x2x2:8:12; do
    IFS=: read -r dd np pct <<< "$g"
    export CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$pct
    xrun ${dd}_mps$pct $dd $np gpu-mpi,gpu-direct,nvshmem "active threads $pct %" 0 \
        "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$pct" --steps $((2 * ps)) --warmup 200
    unset CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
done
# 8. final: the MD step with the build's defaults on one GPU (45k, 180k, 360k) and decomposed
#    (45k on 4 ranks 4x1x1 and 2x2x1, 8 ranks 2x2x2, every GPU halo backend side by side).
if [[ $probes == *final* ]]; then
    export HALOX_BENCH_COMMAND="mpirun -np 1 halox bench md --atoms 45000,180000,360000 --backends gpu --steps 2000 --warmup 200"
    probe md_1gpu 150 "${pmpi[@]}" -np 1 "$HALOX" bench md --atoms 45000,180000,360000 \
        --backends gpu --steps 2000 --warmup 200 -o "$RES/md_1gpu.json"
    grep -h "us/step" "$OUT/logs/probe_md_1gpu.log" | sed "s/^/    /" | tee -a "$OUT/summary.txt"
    for g in 4:4x1x1,2x2x1 8:2x2x2; do
        np=${g%%:*} dd=${g#*:}
        export HALOX_BENCH_COMMAND="mpirun -np $np halox bench md --atoms 45000 --dd $dd --backends gpu-mpi,gpu-direct,nvshmem --steps 2000 --warmup 200"
        probe md_45k_${np}rank 200 "${pmpi[@]}" -np $np "$HALOX" bench md --atoms 45000 --dd $dd \
            --backends gpu-mpi,gpu-direct,nvshmem --steps 2000 --warmup 200 \
            -o "$RES/md_45k_${np}rank.json"
        grep -h "us/step" "$OUT/logs/probe_md_45k_${np}rank.log" | sed "s/^/    /" |
            tee -a "$OUT/summary.txt"
    done
    unset HALOX_BENCH_COMMAND
fi
# 9. repeat: the decomposed 45k step on 4 ranks (4x1x1), every backend, three times in
#    alternating order with 4000 steps each: how far apart two runs of the same backend are,
#    against the differences between backends; then nvshmem at nstlist 40 (searches amortised
#    over twice the steps).
if [[ $probes == *repeat* ]]; then
    for r in 1 2 3; do
        order=gpu-mpi,gpu-direct,nvshmem
        [[ $r -eq 2 ]] && order=nvshmem,gpu-direct,gpu-mpi
        export HALOX_BENCH_COMMAND="mpirun -np 4 halox bench md --atoms 45000 --dd 4x1x1 --backends $order --steps 4000 --warmup 200"
        probe md_45k_4x1x1_r$r 120 "${pmpi[@]}" -np 4 "$HALOX" bench md --atoms 45000 --dd 4x1x1 \
            --backends $order --steps 4000 --warmup 200 -o "$RES/md_45k_4x1x1_r$r.json"
        grep -h "us/step" "$OUT/logs/probe_md_45k_4x1x1_r$r.log" | sed "s/^/    run $r: /" |
            tee -a "$OUT/summary.txt"
    done
    export HALOX_BENCH_COMMAND="mpirun -np 4 halox bench md --atoms 45000 --dd 4x1x1,2x2x1 --backends gpu-direct,nvshmem --nstlist 40 --steps 4000 --warmup 200"
    probe md_45k_4rank_nstlist40 120 "${pmpi[@]}" -np 4 "$HALOX" bench md --atoms 45000 \
        --dd 4x1x1,2x2x1 --backends gpu-direct,nvshmem --nstlist 40 --steps 4000 --warmup 200 \
        -o "$RES/md_45k_4rank_nstlist40.json"
    grep -h "us/step" "$OUT/logs/probe_md_45k_4rank_nstlist40.log" | sed "s/^/    nstlist 40: /" |
        tee -a "$OUT/summary.txt"
    unset HALOX_BENCH_COMMAND
fi
# 10. cli: halox md on 2 ranks with the GPU baselines' short names (--halo mpi, --halo direct):
#     what the log says it ran, and the rolling prune it used.
if [[ $probes == *cli* ]]; then
    w3k=$OUT/logs/w3k.gro
    [[ -f $w3k ]] || "$HALOX" build water --atoms 3000 -o "$w3k" > /dev/null 2>&1
    for h in mpi direct nvshmem; do
        probe md_cli_$h 60 "${pmpi[@]}" -np 2 "$HALOX" md -c "$w3k" --gpu --halo $h --steps 400 \
            --gen-vel 300 --nstenergy 20 -o "$OUT/logs/cli_$h.gro" -g "$OUT/logs/cli_$h.md.log"
        grep -hE "halo exchange|rolling prune|^Performance|conserved-energy" "$OUT/logs/cli_$h.md.log" |
            sed "s/^/    --halo $h: /" | tee -a "$OUT/summary.txt"
    done
fi
# 11. mixture: ethanol in water (45k atoms, OPLS-AA + TIP3P, SHAKE) on one GPU with the
#     defaults (the rolling prune on).
if [[ $probes == *mixture* ]]; then
    mix=$OUT/logs/mix45k.gro
    probe build_mixture 200 "$HALOX" build mixture --atoms 45000 -o "$mix"
    export HALOX_BENCH_COMMAND="mpirun -np 1 halox bench md --conf mix45k.gro --model oplsaa-tip3p --backends gpu --steps 2000 --warmup 200"
    probe md_mix45k_1gpu 120 "${pmpi[@]}" -np 1 "$HALOX" bench md --conf "$mix" --model oplsaa-tip3p \
        --backends gpu --steps 2000 --warmup 200 -o "$RES/md_mix45k_1gpu.json"
    grep -h "us/step" "$OUT/logs/probe_md_mix45k_1gpu.log" | sed "s/^/    /" | tee -a "$OUT/summary.txt"
    unset HALOX_BENCH_COMMAND
fi
# 11b. nstlist (before the ncu probes, which stop MPS): the one-GPU step at NSTLIST_ATOMS
#     (default 45000) over the pair-search intervals of NSTLIST_LIST (default "20 40 50 80 100"),
#     each with the Verlet buffer from the tolerance for its lifetime and the default rolling
#     prune: what a search costs against what the larger outer list costs the prune (GROMACS's
#     peer runs at nstlist 100).
if [[ " $probes " == *" nstlist "* ]]; then
    for nl in ${NSTLIST_LIST:-20 40 50 80 100}; do
        probe nstlist_$nl 120 "${pmpi[@]}" -np 1 "$HALOX" bench md --atoms "${NSTLIST_ATOMS:-45000}" \
            --backends gpu --steps 4000 --warmup 400 --nstlist "$nl" -o "$RES/md_1gpu_nstlist$nl.json"
        grep -h "us/step" "$OUT/logs/probe_nstlist_$nl.log" | sed "s/^/    nstlist $nl: /" |
            tee -a "$OUT/summary.txt"
    done
fi
# 11g. autonstlist: `halox md --gpu` with its defaults (the interval it chooses, issue 27)
#     against explicit intervals with the same defaults otherwise (rolling prune, rlist from the
#     buffer tolerance), on one GPU at AUTON_ATOMS (default "45000 180000"), AUTON_REPS rounds
#     (default 2) in alternating order; ns/day with every step counted (halox md's Performance
#     line: the run loop, searches, energy steps and all). The defaults must come within 3 % of
#     the best. Then NVE drift at the chosen interval (3000 atoms, 25 ps, two seeds, against
#     nstlist 10), the GPU half of test_md_nstlist_cli, and 45k on 4 ranks of the GPU (4x1x1,
#     nvshmem) with the defaults (the decomposed rule) against --nstlist 100.
#     JSON: $RES/autonstlist.json.
if [[ " $probes " == *" autonstlist "* ]]; then
    alog=$OUT/logs/autonstlist
    mkdir -p "$alog"
    arows=$alog/rows.txt
    : > "$arows"
    # arun NAME NP MDARGS...: one halox md run; a row "NAME ns/day nstlist rlist inner parts"
    arun() {
        local name=$1 np=$2
        shift 2
        if [[ $(left) -lt 30 ]]; then
            say "    $name: skipped (the call's time is spent)"
            return
        fi
        timeout 150 "${pmpi[@]}" -np "$np" "$HALOX" md --gpu "$@" -e "$alog/$name.jsonl" \
            -o "$alog/$name.gro" -g "$alog/$name.log" > "$alog/$name.out" 2>&1
        local rc=$?
        local nsd
        nsd=$(sed -nE 's/^Performance: ([0-9.]+) ns\/day.*/\1/p' "$alog/$name.out" | tail -1)
        python3 - "$alog/$name.jsonl" "$name" "${nsd:-nan}" "$rc" >> "$arows" << 'PY'
import json, sys
try:
    r = json.loads(open(sys.argv[1]).readline())["run"]
except Exception:
    r = {}
print(sys.argv[2], sys.argv[3], sys.argv[4], r.get("nstlist"), r.get("rlist_nm"),
      r.get("rlist_inner_nm"), r.get("prune_parts"), r.get("nstlist_automatic"))
PY
        say "    $(tail -1 "$arows")"
    }
    say "  autonstlist: name ns/day rc nstlist rlist inner parts automatic"
    for n in ${AUTON_ATOMS:-45000 180000}; do
        box=$alog/w$n.gro
        "$HALOX" build water --atoms "$n" -o "$box" > /dev/null 2>&1
        st=$((n <= 50000 ? ${AUTON_STEPS_SMALL:-20000} : ${AUTON_STEPS_LARGE:-6000}))
        cfgs="default ${AUTON_LIST:-20 40 60 80 100}"
        for rep in $(seq 1 "${AUTON_REPS:-2}"); do
            order=$cfgs
            [[ $((rep % 2)) -eq 0 ]] && order=$(echo "$cfgs" | tr ' ' '\n' | tac | tr '\n' ' ')
            for c in $order; do
                extra=()
                [[ $c != default ]] && extra=(--nstlist "$c")
                arun "w${n}_${c}_r$rep" 1 -c "$box" --steps "$st" --gen-vel 300 "${extra[@]}"
            done
        done
        grep -h "pair-list interval" -A1 "$alog/w${n}_default_r1.log" | sed 's/^/    /' |
            tee -a "$OUT/summary.txt"
    done
    # NVE drift at the chosen interval (conserved-energy drift of the log) against nstlist 10
    w3k=$alog/w3000.gro
    "$HALOX" build water --atoms 3000 -o "$w3k" > /dev/null 2>&1
    for seed in 1 2; do
        for c in default 10; do
            extra=()
            [[ $c != default ]] && extra=(--nstlist "$c")
            arun "drift_${c}_s$seed" 1 -c "$w3k" --steps 12500 --gen-vel 300 --seed "$seed" \
                --nstenergy 10 "${extra[@]}"
            say "      $(grep -h "^conserved-energy drift" "$alog/drift_${c}_s$seed.log")"
        done
    done
    # the GPU half of the CLI test: who decides the interval, where it is written
    t0=$(date +%s)
    (cd "$BUILD" && timeout 200 ctest -R "test_gpu_md_nstlist_cli" --output-on-failure) \
        > "$alog/ctest_cli.log" 2>&1
    say "    test_gpu_md_nstlist_cli: rc $? ($(($(date +%s) - t0)) s): $(grep -E "tests passed|tests failed" "$alog/ctest_cli.log")"
    grep -E "^(ok|FAIL)" "$alog/ctest_cli.log" | sed 's/^/      /' | tee -a "$OUT/summary.txt"
    # decomposed: 45k on 4 ranks of the one GPU, the defaults (the host search's rule) vs 100
    if [[ ${AUTON_DD:-1} -eq 1 ]]; then
        for c in default 100; do
            extra=()
            [[ $c != default ]] && extra=(--nstlist "$c")
            arun "dd4_${c}" 4 -c "$alog/w45000.gro" --halo nvshmem --dd 4x1x1 --steps 6000 \
                --gen-vel 300 "${extra[@]}"
        done
    fi
    python3 - "$arows" "$RES/autonstlist.json" "${HALOX_GIT_REVISION:-unknown}" << 'PY' 2>&1 | tee -a "$OUT/summary.txt"
import json, statistics, sys, time
rows = []
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 8:
        continue
    num = lambda v: None if v in ("None", "nan") else float(v)
    rows.append({"name": f[0], "ns_per_day": num(f[1]), "rc": int(f[2]),
                 "nstlist": None if f[3] == "None" else int(f[3]), "rlist_nm": num(f[4]),
                 "rlist_inner_nm": num(f[5]), "prune_parts": None if f[6] == "None" else int(f[6]),
                 "nstlist_automatic": f[7] == "True"})
out = {"meta": {"git_revision": sys.argv[3], "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "what": "halox md --gpu on one GPU (env.txt names it): defaults (automatic nstlist) against explicit "
                        "intervals, ns/day with every step counted (the Performance line)",
                "commands": "halox md -c wN.gro --gpu --steps S --gen-vel 300 [--nstlist K]"},
       "runs": rows, "summary": []}
sizes = sorted({r["name"].split("_")[0] for r in rows if r["name"].startswith("w")})
for size in sizes:
    per = {}
    for r in rows:
        p = r["name"].split("_")
        if p[0] == size and r["ns_per_day"] is not None:
            per.setdefault(p[1], []).append(r)
    if "default" not in per:
        continue
    med = {c: statistics.median(x["ns_per_day"] for x in v) for c, v in per.items()}
    best = max(med, key=med.get)
    ratio = med["default"] / med[best]
    chosen = per["default"][0]["nstlist"]
    s = {"atoms": int(size[1:]), "default_nstlist": chosen, "median_ns_per_day": med,
         "best": best, "default_over_best": ratio, "within_3_percent": ratio >= 0.97}
    out["summary"].append(s)
    print("  %s: default (nstlist %s) %.1f ns/day, best %s %.1f: %.3f of the best (%s)" %
          (size, chosen, med["default"], best, med[best], ratio, "ok" if ratio >= 0.97 else "MISSED 3 %"))
    print("    " + ", ".join("%s %.1f" % (c, v) for c, v in sorted(med.items(), key=lambda kv: kv[0])))
json.dump(out, open(sys.argv[2], "w"), indent=1)
PY
fi
# 11c. md1gpu: the one-GPU engine at 45k, 180k and 360k atoms with its defaults, MD1_REPS times
#     (default 2) in the same call: the README's table and issue 12's goals.
if [[ " $probes " == *" md1gpu "* ]]; then
    for rep in $(seq 1 "${MD1_REPS:-2}"); do
        probe md1gpu_$rep 200 "${pmpi[@]}" -np 1 "$HALOX" bench md --atoms 45000,180000,360000 \
            --backends gpu --steps 3000 --warmup 300 -o "$RES/md_1gpu_$rep.json"
        grep -h "us/step" "$OUT/logs/probe_md1gpu_$rep.log" | sed "s/^/    $rep: /" |
            tee -a "$OUT/summary.txt"
    done
fi
# 11e. stages: the device time of each stage of the pair search (HALOX_GPU_SEARCH_TIMING=1) and
#     the step, tests/gpu_md_bench at STAGES_ATOMS (default 45000) for STAGES_CONFIGS
#     (nstlist:parts, default "20:4,30:4,40:4").
if [[ " $probes " == *" stages "* ]]; then
    probe stages 150 env HALOX_GPU_SEARCH_TIMING=1 "$BUILD/tests/gpu_md_bench" \
        --atoms "${STAGES_ATOMS:-45000}" --steps 3000 --warmup 300 \
        --configs "${STAGES_CONFIGS:-20:4,30:4,40:4}" --json "$RES/gpu_md_bench_stages.json" \
        --git-revision "${HALOX_GIT_REVISION:-unknown}"
    grep -hE "us/step median|search stages|captures" "$OUT/logs/probe_stages.log" | sed 's/^/    /' |
        tee -a "$OUT/summary.txt"
fi
# 11f. stagesg: the same step with the search's graph (no stage timing: graph events do not time)
if [[ " $probes " == *" stagesg "* ]]; then
    probe stagesg 150 "$BUILD/tests/gpu_md_bench" --atoms "${STAGES_ATOMS:-45000}" --steps 3000 \
        --warmup 300 --configs "${STAGES_CONFIGS:-20:4,30:4,40:4}" \
        --json "$RES/gpu_md_bench_stagesg.json" --git-revision "${HALOX_GIT_REVISION:-unknown}"
    grep -hE "us/step median|captures" "$OUT/logs/probe_stagesg.log" | sed 's/^/    /' |
        tee -a "$OUT/summary.txt"
fi
# 11d. sanq: compute-sanitizer (SANQ_TOOLS, default memcheck and racecheck) on SANQ_TESTS
#     (default test_gpu_update), quick mode: the single-process tests a change touched, without
#     the whole --sanitize phase.
if [[ " $probes " == *" sanq "* ]] && command -v compute-sanitizer > /dev/null; then
    for t in ${SANQ_TESTS:-test_gpu_update}; do
        for tool in ${SANQ_TOOLS:-memcheck racecheck}; do
            HALOX_GPU_TEST_QUICK=1 probe san_${t}_$tool 120 compute-sanitizer --tool "$tool" \
                --error-exitcode 9 "$BUILD/tests/$t"
            grep -Eo "(ERROR|RACECHECK) SUMMARY: [0-9]+ (error|hazard)" \
                "$OUT/logs/probe_san_${t}_$tool.log" | tail -1 | sed "s/^/    $t $tool: /" |
                tee -a "$OUT/summary.txt"
        done
    done
fi
# 12. ncu: device time of every kernel of a 45k-atom run's first steps (the search step
#     included), direct launches (no graph), one metric per kernel. ncu cannot profile under
#     MPS with --csv, and one process does not need it: MPS is stopped first (the last probe).
if [[ " $probes " == *" ncu "* ]] && command -v ncu > /dev/null; then
    echo quit | nvidia-cuda-mps-control > /dev/null 2>&1
    sleep 1
    probe ncu_45k 150 ncu --clock-control none --metrics gpu__time_duration.sum --csv \
        --launch-count ${NCU_LAUNCHES:-400} "$BUILD/tests/gpu_md_bench" --atoms 45000 --steps 40 \
        --warmup 0 --configs 20:4 --no-graph
    python3 - "$OUT/logs/probe_ncu_45k.log" <<'PY' 2>&1 | sed 's/^/    /' | tee -a "$OUT/summary.txt"
import csv, sys, statistics as st
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
hdr, rows = rows[0], rows[1:]
ki, vi, ui = hdr.index("Kernel Name"), hdr.index("Metric Value"), hdr.index("Metric Unit")
per = {}
for r in rows:
    v = float(r[vi].replace(",", ""))
    scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}
    v *= scale.get(r[ui], 1.0)
    per.setdefault(r[ki].split("(")[0], []).append(v)
print("%-34s %6s %10s %10s %10s" % ("kernel", "count", "median us", "max us", "sum us"))
for k, v in sorted(per.items(), key=lambda kv: -sum(kv[1])):
    print("%-34s %6d %10.1f %10.1f %10.1f" % (k[-34:], len(v), st.median(v), max(v), sum(v)))
PY
fi
# 13. ncusec: where the time of the 45k step's slow kernels goes (stall reasons, occupancy,
#     memory and issue utilisation), one instance of each, real clocks; plus the SASS lines with
#     the most stall samples where this ncu can print its source page. MPS stopped first.
#     NCUSEC_KERNELS "name:skip ..." picks the kernels, NCUSEC_CONFIGS gpu_md_bench's
#     nstlist:parts (default 20:4; 100:8 gives the outer list of a decomposed run's nstlist).
if [[ " $probes " == *" ncusec "* ]] && command -v ncu > /dev/null; then
    echo quit | nvidia-cuda-mps-control > /dev/null 2>&1
    sleep 1
    ncu --version | tail -1 | sed 's/^/    ncu: /' | tee -a "$OUT/summary.txt"
    for ks in ${NCUSEC_KERNELS:-k_update:5 k_gather_home:5 k_home_terms:5 k_reduce:5 k_list_build:1 k_nb_fast:10 k_prune:10 \
        k_col_sort:1 k_sc_build:1}; do
        k=${ks%:*} skip=${ks#*:}
        probe ncusec_$k 120 ncu --clock-control none -k "regex:^$k\$" --launch-skip "$skip" \
            --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats \
            --section WarpStateStats --section SchedulerStats --section SourceCounters \
            --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
            --import-source no -o "$OUT/logs/ncusec_$k" "$BUILD/tests/gpu_md_bench" \
            --atoms 45000 --steps 40 --warmup 0 --configs "${NCUSEC_CONFIGS:-20:4}" --no-graph
        if [[ -f $OUT/logs/ncusec_$k.ncu-rep ]]; then
            ncu -i "$OUT/logs/ncusec_$k.ncu-rep" --print-details all > "$OUT/logs/ncusec_$k.txt" 2>&1
            ncu -i "$OUT/logs/ncusec_$k.ncu-rep" --page source --csv --print-source sass \
                > "$OUT/logs/ncusec_${k}_sass.csv" 2>&1 || true
            rm -f "$OUT/logs/ncusec_$k.ncu-rep"
            python3 "$here/scripts/ncu_stalls.py" "$OUT/logs/ncusec_${k}_sass.csv" 8 2>&1 |
                sed "s/^/    $k: /" | tee -a "$OUT/summary.txt"
            grep -E "Duration|Achieved Occupancy|Registers Per|Warp Cycles Per Issued|Issue Slots Busy|Memory Throughput|No Eligible|Waves Per SM" \
                "$OUT/logs/ncusec_$k.txt" | head -12 | sed "s/^/    $k: /" | tee -a "$OUT/summary.txt"
        fi
    done
fi
# 14. ab: the working tree against an earlier revision (AB_BASE, default HEAD), built side by
#     side from git in one call: halox bench md on one GPU (AB_ATOMS, default 45000; AB_STEPS),
#     the variants of AB_VARIANTS (below) alternated AB_REPS times. AB_BASE must be a commit
#     the device's copy of .git has (the session's start).
# ab_build_base TARGETS...: the tree of AB_BASE (default HEAD) built in /tmp/halox-ab-base-build
# (Release, as this build); sets base_rev and bbuild, returns non-zero when it did not build.
# AB_BASE_TARBALL (a `git archive --format=tar.gz` of AB_BASE put in the tree, not committed)
# replaces the device's .git, which may not have the commit.
ab_build_base() {
    bsrc=/tmp/halox-ab-base bbuild=/tmp/halox-ab-base-build
    rm -rf "$bsrc" && mkdir -p "$bsrc"
    if [[ -n ${AB_BASE_TARBALL:-} ]]; then
        base_rev=${AB_BASE:-tarball}
        tar -xzf "$here/$AB_BASE_TARBALL" -C "$bsrc" || return 1
    else
        base_rev=$(cd "$here" && git rev-parse "${AB_BASE:-HEAD}" 2>/dev/null)
        [[ -n $base_rev ]] && (cd "$here" && git archive "$base_rev") | tar -x -C "$bsrc" ||
            return 1
    fi
    cmake -S "$bsrc" -B "$bbuild" $gen -DCMAKE_BUILD_TYPE=Release -DHALOX_WITH_CUDA=ON \
        -DHALOX_WITH_MPI=ON -DHALOX_WITH_NVSHMEM=${HALOX_NVSHMEM:-ON} \
        ${NVSHMEM_HOME_WHEEL:+-DNVSHMEM_HOME=$NVSHMEM_HOME_WHEEL} \
        ${prefix:+-DCMAKE_PREFIX_PATH=$prefix} > "$OUT/logs/ab_base_configure.log" 2>&1 &&
        cmake --build "$bbuild" -j "$(nproc)" --target "$@" > "$OUT/logs/ab_base_build.log" 2>&1
}
if [[ " $probes " == *" ab "* ]]; then
    if ab_build_base halox gpu_md_bench; then
        say "  ab: base ${base_rev:0:10} built ($(elapsed) s)"
        ab_atoms=${AB_ATOMS:-45000} ab_steps=${AB_STEPS:-3000}
        # AB_VARIANTS: "base" (the base build) or "NAME[:VAR=VALUE[,VAR=VALUE]]" (this build
        # with those environment variables), e.g. "base new new-b64:HALOX_GPU_UPDATE_BLOCK=64"
        for rep in $(seq 1 "${AB_REPS:-2}"); do
            for spec in ${AB_VARIANTS:-base new new-unfused:HALOX_GPU_FUSE_UPDATE=0}; do
                v=${spec%%:*} exe=$HALOX envs=()
                [[ $v == base ]] && exe=$bbuild/halox
                [[ $spec == *:* ]] && IFS=, read -r -a envs <<< "${spec#*:}"
                probe ab_${v}_$rep 120 "${pmpi[@]}" -np 1 env "${envs[@]}" "$exe" bench md \
                    --atoms "$ab_atoms" --backends gpu --steps "$ab_steps" --warmup 300 \
                    -o "$RES/ab_${v}_$rep.json"
                grep -h "us/step" "$OUT/logs/probe_ab_${v}_$rep.log" | sed "s/^/    $v $rep: /" |
                    tee -a "$OUT/summary.txt"
            done
        done
    else
        say "  ab: base ${base_rev:-?} did not build (logs/ab_base_*.log)"
    fi
fi

# 14b. ddab (issue 27): the decomposed search step of the working tree against AB_BASE's (built
#     as for ab), `halox md --gpu` with defaults on 4 ranks of the GPU, 45k SPC/E, the grids of
#     DDAB_GRIDS (default "4x1x1 2x2x1"), base and new alternated DDAB_REPS times (default 2),
#     DDAB_STEPS steps (default 5000); the search step by part and ns/day of each run.
if [[ " $probes " == *" ddab "* ]]; then
    if ab_build_base halox; then
        say "  ddab: base ${base_rev:0:10} built ($(elapsed) s)"
        dd_w45=$OUT/logs/ddab_w45k.gro
        "$HALOX" build water --model spce --atoms 45000 --seed 1 -o "$dd_w45" \
            > "$OUT/logs/ddab_build.log" 2>&1
        for rep in $(seq 1 "${DDAB_REPS:-2}"); do
            for dd in ${DDAB_GRIDS:-4x1x1 2x2x1}; do
                for v in base new; do
                    exe=$HALOX
                    [[ $v == base ]] && exe=$bbuild/halox
                    nm=ddab_${dd}_${v}_$rep
                    probe "$nm" 120 timeout -s KILL 110 "${pmpi[@]}" -np 4 "$exe" md --gpu \
                        -c "$dd_w45" --dd "$dd" --steps "${DDAB_STEPS:-5000}" \
                        -o "$OUT/logs/$nm.gro" -g "$OUT/logs/$nm.md.log"
                    grep -hE "^search step:|^performance:" "$OUT/logs/$nm.md.log" 2>/dev/null |
                        cut -c1-330 | sed "s/^/    $dd $v $rep: /" | tee -a "$OUT/summary.txt"
                    rm -f "$OUT/logs/$nm.gro"
                done
            done
        done
    else
        say "  ddab: base ${base_rev:-?} did not build (logs/ab_base_*.log)"
    fi
fi

# floors: one message between two processes' GPUs (bench/link_floors.cu: flag only, float4
# stores, bulk copy at 4/32/128 KB) and the kernel-per-step signal hop (bench/mps_dispatch.cu),
# on one GPU under MPS and, with two or more GPUs, one process per GPU (MPS on, then off).
if [[ $probes == *floors* ]]; then
    fl() { # name visible-devices
        CUDA_VISIBLE_DEVICES=$2 probe floors_$1 120 "${pmpi[@]}" -x CUDA_VISIBLE_DEVICES -np 2 \
            "$BUILD/tests/link_floors" --iters "${FLOOR_ITERS:-5000}" --json "$RES/floors_$1.json"
        grep -E "^ +(flag|stores|bulk)|link_floors" "$OUT/logs/probe_floors_$1.log" |
            sed "s/^/    $1: /" | tee -a "$OUT/summary.txt"
        CUDA_VISIBLE_DEVICES=$2 probe dispatch2_$1 120 "${pmpi[@]}" -x CUDA_VISIBLE_DEVICES -np 2 \
            "$BUILD/tests/mps_dispatch" --json "$RES/dispatch2_$1.json"
        grep -E "ring|boundary|empty" "$OUT/logs/probe_dispatch2_$1.log" | sed "s/^/    $1: /" |
            tee -a "$OUT/summary.txt"
    }
    fl 1gpu_mps 0
    if [[ $(nvidia-smi -L 2>/dev/null | grep -c '^GPU ') -ge 2 ]]; then
        fl 2gpu_mps 0,1
        echo quit | nvidia-cuda-mps-control > /dev/null 2>&1
        sleep 1
        fl 2gpu_nomps 0,1
        nvidia-cuda-mps-control -d > /dev/null 2>&1
    fi
fi

# roofline (issue 28): the one-GPU water step's kernels against their floors
# (docs/design/gpu-engine.md, "Roofline"). MPS stopped (ncu needs it off; one process).
#  1. the card's two ceilings as seen by a program: a device-to-device copy (bytes read +
#     written) and an FP32 matrix product without TF32 (PyTorch, if there);
#  2. gpu_md_bench at 45k/180k/360k with the engine's list settings (nstlist 20, 4 prune parts,
#     inner radius at a hundredth of the tolerance), plus 45k without the prune and at nstlist
#     40: step, pair kernel alone, pairs within rc and evaluations (the cluster efficiency);
#  3. ncu device time of every kernel over 60 steps at 45k (direct launches);
#  4. ncu --set full on one steady-state instance (step 10) of the pair kernel, the update, the
#     rolling prune and the home terms at 45k, and the pair kernel and update at 180k: details,
#     raw metrics and the SASS source page with stall samples (scripts/ncu_stalls.py);
#  5. the SASS and resource usage of the built kernels (cuobjdump).
# ROOF_STEPS (default 2000) sets the benchmark's steps.
if [[ " $probes " == *" roofline "* ]]; then
    echo quit | nvidia-cuda-mps-control > /dev/null 2>&1
    sleep 1
    rev=${HALOX_GIT_REVISION:-unknown}
    itol=0.00005 # the engine's inner tolerance: 0.005 x HX_MD_PRUNE_TOLERANCE_FRACTION
    nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu \
        --format=csv > "$OUT/logs/roof_clocks_before.txt" 2>&1
    probe roof_ceilings 60 python3 - <<'PY'
import time, torch
if not torch.cuda.is_available():
    raise SystemExit("no torch GPU")
torch.backends.cuda.matmul.allow_tf32 = False
n = 1 << 28  # 1 GiB of float32 each way
a = torch.empty(n, device="cuda").uniform_(); b = torch.empty_like(a)
for _ in range(3): b.copy_(a)
torch.cuda.synchronize(); e0, e1 = torch.cuda.Event(True), torch.cuda.Event(True)
e0.record()
for _ in range(20): b.copy_(a)
e1.record(); torch.cuda.synchronize()
ms = e0.elapsed_time(e1) / 20
print("copy: %.3f ms for 2 x %.2f GB: %.2f TB/s (read + written)" % (ms, 4 * n / 1e9, 8 * n / ms / 1e9))
m = 8192
x = torch.randn(m, m, device="cuda"); y = torch.randn(m, m, device="cuda")
for _ in range(3): x @ y
torch.cuda.synchronize(); e0.record()
for _ in range(10): x @ y
e1.record(); torch.cuda.synchronize()
ms = e0.elapsed_time(e1) / 10
print("sgemm fp32 (no tf32) %d^3: %.2f ms, %.1f TFLOP/s" % (m, ms, 2 * m ** 3 / ms / 1e9))
PY
    grep -E "copy|sgemm" "$OUT/logs/probe_roof_ceilings.log" | sed 's/^/    /' | tee -a "$OUT/summary.txt"
    probe roof_bench 200 "$BUILD/tests/gpu_md_bench" --atoms 45000,180000,360000 \
        --steps "${ROOF_STEPS:-2000}" --warmup 200 --configs 20:4:$itol \
        --json "$RES/roof_bench_sizes.json" --git-revision "$rev"
    tail -4 "$OUT/logs/probe_roof_bench.log" | sed 's/^/    /' | tee -a "$OUT/summary.txt"
    probe roof_bench45 100 "$BUILD/tests/gpu_md_bench" --atoms 45000 \
        --steps "${ROOF_STEPS:-2000}" --warmup 200 --configs 20:0,40:4:$itol,20:4:$itol \
        --json "$RES/roof_bench_45k.json" --git-revision "$rev"
    tail -4 "$OUT/logs/probe_roof_bench45.log" | sed 's/^/    /' | tee -a "$OUT/summary.txt"
    grep -hE "evaluations|searches" "$OUT/logs/probe_roof_bench.log" "$OUT/logs/probe_roof_bench45.log" |
        cut -c1-400 > "$OUT/logs/roof_lists.txt"
    if command -v ncu > /dev/null; then
        ncu --version | tail -1 | sed 's/^/    ncu: /' | tee -a "$OUT/summary.txt"
        probe roof_ncu_times 90 ncu --clock-control none --metrics gpu__time_duration.sum --csv \
            --launch-count 600 "$BUILD/tests/gpu_md_bench" --atoms 45000 --steps 60 --warmup 0 \
            --configs 20:4:$itol --no-graph
        python3 - "$OUT/logs/probe_roof_ncu_times.log" <<'PY' 2>&1 | sed 's/^/    /' | tee -a "$OUT/summary.txt"
import csv, sys, statistics as st
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
hdr, rows = rows[0], rows[1:]
ki, vi, ui = hdr.index("Kernel Name"), hdr.index("Metric Value"), hdr.index("Metric Unit")
per = {}
for r in rows:
    v = float(r[vi].replace(",", ""))
    v *= {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}.get(r[ui], 1.0)
    per.setdefault(r[ki].split("(")[0], []).append(v)
print("%-34s %6s %10s %10s %10s" % ("kernel", "count", "median us", "max us", "sum us"))
for k, v in sorted(per.items(), key=lambda kv: -sum(kv[1])):
    print("%-34s %6d %10.1f %10.1f %10.1f" % (k[-34:], len(v), st.median(v), max(v), sum(v)))
PY
        # name atoms regex skip count: one ncu --set full run, its reports exported as text
        roofncu() {
            local name=$1 atoms=$2 re=$3 skip=$4 count=$5
            probe roofncu_$name 150 ncu --clock-control none --set full --import-source no \
                -k "regex:^($re)\$" --launch-skip "$skip" --launch-count "$count" \
                -o "$OUT/logs/roofncu_$name" "$BUILD/tests/gpu_md_bench" --atoms "$atoms" \
                --steps 40 --warmup 0 --configs 20:4:$itol --no-graph
            local rep=$OUT/logs/roofncu_$name.ncu-rep
            [[ -f $rep ]] || return
            ncu -i "$rep" --print-details all > "$OUT/logs/roofncu_$name.txt" 2>&1
            ncu -i "$rep" --page raw --csv > "$OUT/logs/roofncu_${name}_raw.csv" 2>&1
            for k in ${re//|/ }; do
                ncu -i "$rep" -k "regex:^$k\$" --page source --csv --print-source sass \
                    > "$OUT/logs/roofncu_${name}_${k}_sass.csv" 2>&1 || true
                python3 "$here/scripts/ncu_stalls.py" "$OUT/logs/roofncu_${name}_${k}_sass.csv" 6 \
                    2>&1 | head -4 | cut -c1-150 | sed "s/^/    $name $k: /" | tee -a "$OUT/summary.txt"
            done
            grep -E "^  [a-z_]|Duration|Achieved Occupancy|Registers Per|Issue Slots Busy|Warp Cycles Per Issued|L1/TEX Cache Throughput|Compute \(SM\) Throughput|Executed Ipc Active|Instructions Executed" \
                "$OUT/logs/roofncu_$name.txt" | cut -c1-130 | sed "s/^/    $name: /" | tee -a "$OUT/summary.txt"
            rm -f "$rep"
        }
        # launches per step without a graph: home terms, prune, pairs, update (skip 10 steps)
        roofncu 45k 45000 "k_nb_fast|k_update|k_prune|k_home_terms" 40 4
        roofncu 180k 180000 "k_nb_fast|k_update" 20 2
    fi
    if command -v cuobjdump > /dev/null; then
        for o in nb_gpu update_gpu; do
            f=$(find "$BUILD" -name "$o.cu.o" | head -1)
            [[ -n $f ]] || continue
            cuobjdump -res-usage "$f" > "$OUT/logs/roof_${o}_res.txt" 2>&1
            cuobjdump -sass "$f" > "$OUT/logs/roof_${o}.sass" 2>&1
        done
    fi
    nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu \
        --format=csv > "$OUT/logs/roof_clocks_after.txt" 2>&1
fi

# roofab (issue 28): the pair-kernel and update variants against main's kernels, GROMACS beside
# them, in one call (docs/design/gpu-engine.md, "Roofline"). MPS stopped (one process; ncu).
#  1. correctness: test_gpu_nb (every pair-kernel variant against the CPU on every list), then
#     test_gpu_update, test_gpu_md, test_gpu_ethanol and test_gpu_engine_np1 with the new variants selected
#     (HALOX_GPU_NB_KERNEL=comb-2hsp, HALOX_GPU_UPDATE_UNROLL=1; NVE drift bars unchanged);
#  2. gpu_md_bench at ROOFAB_ATOMS (45k/180k/360k), nstlist 20 with 4 prune parts and the
#     engine's inner tolerance, for each variant of ROOFAB_VARIANTS (NAME:VAR=VALUE,...; "base"
#     is main's: comb kernel, update loops), alternated ROOFAB_REPS times at 45k;
#     then the last variant at other prune parts and nstlist 40 (ROOFAB_CONFIGS), 45k and 180k;
#     SETTLE in float (HALOX_GPU_SETTLE=float) is tested by test_gpu_md's and test_gpu_ethanol's
#     NVE drift bars first;
#  3. halox bench md (the engine, every step counted) for base, 2hsp and the last variant;
#  4. GROMACS beside `halox md --gpu` with the new variants (ROOFAB_COMPARE_ENV, default those of
#     the tests) through bench/compare_gpu.py, 45k/180k/360k on one GPU (carry .tools);
#  5. ncu --set full on the new pair kernel and update at 45k (step 10).
# A table last: ns/day and pair-kernel/update times per variant and size, GROMACS's ns/day.
if [[ " $probes " == *" roofab "* ]]; then
    echo quit | nvidia-cuda-mps-control > /dev/null 2>&1
    sleep 1
    rev=${HALOX_GIT_REVISION:-unknown}
    itol=0.00005 # the engine's inner tolerance: 0.005 x HX_MD_PRUNE_TOLERANCE_FRACTION
    new_env=(HALOX_GPU_NB_KERNEL=comb-2hsp HALOX_GPU_UPDATE_UNROLL=1)
    t0=$(date +%s)
    (cd "$BUILD" && timeout 240 ctest -R 'test_gpu_(nb|update)$' --output-on-failure \
        --timeout 200) > "$OUT/logs/roofab_ctest_base.log" 2>&1
    say "  roofab tests, main's variants ($(($(date +%s) - t0)) s): $(grep -E 'tests passed|tests failed' "$OUT/logs/roofab_ctest_base.log" | tail -1)"
    t0=$(date +%s)
    (cd "$BUILD" && env "${new_env[@]}" timeout 300 ctest -R 'test_gpu_(update|md|ethanol|engine_np1)$' \
        --output-on-failure --timeout 240) > "$OUT/logs/roofab_ctest_new.log" 2>&1
    say "  roofab tests, ${new_env[*]} ($(($(date +%s) - t0)) s): $(grep -E 'tests passed|tests failed' "$OUT/logs/roofab_ctest_new.log" | tail -1)"
    grep -hE "drift|NVE|FAIL" "$OUT/logs/roofab_ctest_new.log" | cut -c1-160 | head -12 |
        sed 's/^/    /' | tee -a "$OUT/summary.txt"
    # SETTLE in float: the NVE drift bars of test_gpu_md and test_gpu_ethanol decide
    t0=$(date +%s)
    (cd "$BUILD" && env "${new_env[@]}" HALOX_GPU_SETTLE=float timeout 200 ctest \
        -R 'test_gpu_(md|ethanol)$' -V --timeout 150) > "$OUT/logs/roofab_ctest_f32.log" 2>&1
    say "  roofab tests, ${new_env[*]} HALOX_GPU_SETTLE=float ($(($(date +%s) - t0)) s): $(grep -E 'tests passed|tests failed' "$OUT/logs/roofab_ctest_f32.log" | tail -1)"
    grep -hE "drift|NVE|FAIL" "$OUT/logs/roofab_ctest_f32.log" | sed -E 's/^[0-9]+: //' |
        cut -c1-160 | head -12 | sed 's/^/    /' | tee -a "$OUT/summary.txt"
    variants=${ROOFAB_VARIANTS:-"base:HALOX_GPU_NB_KERNEL=comb,HALOX_GPU_UPDATE_UNROLL=0 upd:HALOX_GPU_NB_KERNEL=comb,HALOX_GPU_UPDATE_UNROLL=1 f32:HALOX_GPU_NB_KERNEL=comb,HALOX_GPU_UPDATE_UNROLL=1,HALOX_GPU_SETTLE=float 2h:HALOX_GPU_NB_KERNEL=comb-2h,HALOX_GPU_UPDATE_UNROLL=1 2hs:HALOX_GPU_NB_KERNEL=comb-2hs,HALOX_GPU_UPDATE_UNROLL=1 2hsp:HALOX_GPU_NB_KERNEL=comb-2hsp,HALOX_GPU_UPDATE_UNROLL=1 2hspf:HALOX_GPU_NB_KERNEL=comb-2hsp,HALOX_GPU_UPDATE_UNROLL=1,HALOX_GPU_SETTLE=float"}
    for rep in $(seq 1 "${ROOFAB_REPS:-2}"); do
        for spec in $variants; do
            v=${spec%%:*} envs=()
            [[ $spec == *:* ]] && IFS=, read -r -a envs <<< "${spec#*:}"
            atoms=45000
            [[ $rep -eq 1 ]] && atoms=${ROOFAB_ATOMS:-45000,180000,360000}
            probe roofab_${v}_$rep 150 env "${envs[@]}" "$BUILD/tests/gpu_md_bench" \
                --atoms "$atoms" --steps "${ROOFAB_STEPS:-3000}" --warmup 300 \
                --configs 20:4:$itol --json "$RES/roofab_${v}_$rep.json" --git-revision "$rev"
            grep -E "^[0-9]+ +20 " "$OUT/logs/probe_roofab_${v}_$rep.log" | sed "s/^/    $v $rep: /" |
                tee -a "$OUT/summary.txt"
        done
    done
    # the rolling prune's parts and the search interval with the last variant (45k, 180k)
    last=${variants##* }
    v=${last%%:*} envs=()
    [[ $last == *:* ]] && IFS=, read -r -a envs <<< "${last#*:}"
    probe roofab_${v}_cfg 150 env "${envs[@]}" "$BUILD/tests/gpu_md_bench" --atoms 45000,180000 \
        --steps "${ROOFAB_STEPS:-3000}" --warmup 300 \
        --configs "${ROOFAB_CONFIGS:-20:2:$itol,20:8:$itol,40:4:$itol,40:8:$itol}" \
        --json "$RES/roofab_${v}_cfg.json" --git-revision "$rev"
    grep -E "^[0-9]+ +[0-9]+ +[0-9]+ +1\.[0-9]" "$OUT/logs/probe_roofab_${v}_cfg.log" |
        sed "s/^/    $v cfg: /" | tee -a "$OUT/summary.txt"
    for spec in ${ROOFAB_MD:-"${variants%% *}" "$(echo "$variants" | tr ' ' '\n' | grep '^2hsp:')" "$last"}; do
        v=${spec%%:*} envs=()
        [[ $spec == *:* ]] && IFS=, read -r -a envs <<< "${spec#*:}"
        export HALOX_BENCH_COMMAND="${spec#*:} halox bench md --atoms ${ROOFAB_ATOMS:-45000,180000,360000} --backends gpu --steps 3000 --warmup 300"
        probe roofab_md_$v 200 "${pmpi[@]}" -np 1 env "${envs[@]}" "$HALOX" bench md \
            --atoms "${ROOFAB_ATOMS:-45000,180000,360000}" --backends gpu --steps 3000 \
            --warmup 300 -o "$RES/roofab_md_$v.json"
        grep -h "us/step" "$OUT/logs/probe_roofab_md_$v.log" | sed "s/^/    md $v: /" |
            tee -a "$OUT/summary.txt"
        unset HALOX_BENCH_COMMAND
    done
    # GROMACS beside halox md --gpu with the new variants (bench/compare_gpu.py, one GPU, every
    # step counted; its .tools/gmx-cuda-sm90.tar.xz, or HALOX_GMX_TARBALL, carried with the call)
    cenv=(${ROOFAB_COMPARE_ENV:-${new_env[@]}})
    # a tree copied into a folder of the checkout (.carry/NAME) finds the checkout's .tools
    gt=$here/../../.tools/gmx-cuda-sm90.tar.xz
    [[ -z ${HALOX_GMX_TARBALL:-} && ! -f $here/.tools/gmx-cuda-sm90.tar.xz && -f $gt ]] &&
        export HALOX_GMX_TARBALL=$gt
    cbudget=$(($(left) - 60))
    if [[ $cbudget -gt 60 ]]; then
        export HALOX_BENCH_COMMAND="${cenv[*]} bench/compare_gpu.py --configs 1gpu-45k,1gpu-180k,1gpu-360k"
        (cd "$here" && env "${cenv[@]}" python3 bench/compare_gpu.py --halox "$HALOX" \
            --out "$RES/compare" --budget "$cbudget" --seconds "${ROOFAB_COMPARE_SECONDS:-8}" \
            --configs "${ROOFAB_COMPARE_CONFIGS:-1gpu-45k,1gpu-180k,1gpu-360k}") \
            > "$OUT/logs/roofab_compare.log" 2>&1
        say "  compare (${cenv[*]}): rc $?"
        tail -8 "$OUT/logs/roofab_compare.log" | sed 's/^/    /' | tee -a "$OUT/summary.txt"
        unset HALOX_BENCH_COMMAND
    else
        say "  compare: skipped (only $(left) s left)"
    fi
    if command -v ncu > /dev/null; then
        ncu_kernels roofab_ncu 150 ncu "k_nb_2h k_update" 20 2 40 "${new_env[@]}"
    fi
    say "  roofab: gpu_md_bench tables (us per step, ns/day with searches, pair kernel, prune):"
    for spec in $variants; do
        v=${spec%%:*}
        grep -E "^[0-9]+ +20 " "$OUT/logs/probe_roofab_${v}_1.log" 2>/dev/null |
            awk -v v="$v" '{ printf "    %-6s %7d atoms: median %7.1f us, mean %7.1f us, %6.0f ns/day, pair kernel %6.1f us\n", v, $1, $5, $6, $8, $9 }' |
            tee -a "$OUT/summary.txt"
    done
fi
# gpusearch: the decomposed search step on the device (issue 27), one command per call:
#   PROBE=gpusearch scripts/h200.sh --exec scripts/h200_probe.sh   (carry .tools for GROMACS)
# GPUSEARCH_PARTS selects the parts (default "check compare"; "tests ab" fill a second call):
#  check    test_gpu_dd_search_mpi on 4 ranks of the GPU under MPS: the engine searching on the
#           device against the same engine searching on the host (4x1x1 and 2x2x1; gpu-mpi,
#           gpu-direct, nvshmem; a run through both slow paths), so that the figures below come
#           from a correct search step;
#  compare  45k SPC/E on one GPU under MPS, 4 ranks 4x1x1 and 2x2x1, 8 ranks 2x2x2
#           (GPUSEARCH_CONFIGS): `halox md --gpu` with its defaults beside GROMACS in the same call
#           (bench/compare_gpu.py: the one .mdp, GROMACS -nstlist 100 with thread-MPI ranks
#           -gputasks 0000), every launch under timeout -s KILL; ns/day with every step counted,
#           the ratio, and halox's search step by part (µs per search, slowest rank of each part,
#           from its log), against the issue's targets;
#  bench    `halox bench md` at 45k on 4 ranks (4x1x1, 2x2x1; nvshmem, 2000 steps after 200):
#           the search step on the engine's step clock (search_step_clock_us: from the end of
#           the step before it to its own end, device events) beside the plain step, the
#           figure the issue's 300 us target is about; $RES/gpusearch/bench_md_45k_4r.json;
#  tests    the other GPU tests of the device search step: test_gpu_decomp (bit for bit against
#           the host decomposition), test_gpu_dd_search in one process, then over 2 and 8 ranks;
#  ab       halox md --gpu on 4 ranks 4x1x1 with the search steps on the host (HALOX_GPU_DD=0),
#           with the device step's parts launched directly (HALOX_GPU_DD_GRAPH=0) and with the
#           defaults: the search step by part of each;
#  ktimes   halox md --gpu on 4 ranks, 4x1x1 and 2x2x1, with every kernel of the device parts
#           timed (HALOX_GPU_DD_KTIMES=1): rank 0's table per kernel into the summary;
#  stages   halox md --gpu on 4 ranks 4x1x1 with the pair search timed by stage
#           (HALOX_GPU_SEARCH_TIMING=1): every domain's line and the step graph's captures;
#  nstlist  the decomposed runs' defaults against explicit pair-list intervals (see there).
# JSON: $RES/gpusearch/compare.json (compare_gpu.py's: provenance, every run with its
# search_step_parts_us) and $RES/gpusearch/gpusearch.json (per configuration ns/day, GROMACS,
# the ratio, the search step and its parts, each target met or not; the A/B runs).
# GPUSEARCH_SECONDS: stepping time per compare run (default 8); GPUSEARCH_STEPS: steps of the
# A/B runs (default 5000).
if [[ " $probes " == *" gpusearch "* ]]; then
    gs_parts=" ${GPUSEARCH_PARTS:-check bench compare} "
    gs_dir=$RES/gpusearch
    mkdir -p "$gs_dir"
    # the outer launcher timeout: a rank spinning in a device wait ignores mpirun's signals
    kpmpi=(timeout -s KILL 180 "${pmpi[@]}" -x HALOX_GPU_DD -x HALOX_GPU_DD_GRAPH)
    gs_tests() { # name timeout-s np(0: no mpirun) test-program
        local name=$1 to=$2 np=$3 prog=$4
        if [[ $np -eq 0 ]]; then
            probe "gs_$name" "$to" timeout -s KILL $((to - 10)) "$BUILD/tests/$prog"
        else
            probe "gs_$name" "$to" timeout -s KILL $((to - 10)) "${pmpi[@]}" -np "$np" \
                "$BUILD/tests/$prog"
        fi
        grep -hE "steps:|device run|device search step|FAIL|cases|SKIP" \
            "$OUT/logs/probe_gs_$name.log" 2>/dev/null | cut -c1-170 | head -40 |
            sed "s/^/    $name: /" | tee -a "$OUT/summary.txt"
    }
    if [[ $gs_parts == *" check "* ]]; then
        gs_tests dd_search_np4 250 4 test_gpu_dd_search_mpi
    fi
    if [[ $gs_parts == *" bench "* ]]; then
        export HALOX_BENCH_COMMAND="mpirun -np 4 halox bench md --atoms 45000 --dd 4x1x1,2x2x1 --backends nvshmem --steps 2000 --warmup 200"
        probe gs_bench 150 "${kpmpi[@]}" -np 4 "$HALOX" bench md --atoms 45000 \
            --dd 4x1x1,2x2x1 --backends nvshmem --steps 2000 --warmup 200 \
            -o "$gs_dir/bench_md_45k_4r.json"
        unset HALOX_BENCH_COMMAND
        python3 - "$gs_dir/bench_md_45k_4r.json" << 'PY' 2>&1 | tee -a "$OUT/summary.txt"
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    sys.exit(f"    bench: no result ({e})")
for r in d.get("runs", []):
    dd = "x".join(map(str, r["dd"]))
    print(f"    bench {dd} {r['backend']}: plain step {r['us_per_step']:.1f} us, search step "
          f"{r.get('search_step_clock_us', float('nan')):.0f} us on the step clock (host's search "
          f"{r['search_step_us']:.0f} us, on the {r.get('search_step_on')}), every step "
          f"{r['ns_per_day_with_search']:.0f} ns/day at nstlist {r['nstlist']}")
PY
    fi
    if [[ $gs_parts == *" compare "* ]]; then
        gt=$here/../../.tools/gmx-cuda-sm90.tar.xz
        [[ -z ${HALOX_GMX_TARBALL:-} && ! -f $here/.tools/gmx-cuda-sm90.tar.xz && -f $gt ]] &&
            export HALOX_GMX_TARBALL=$gt
        gs_cfg=${GPUSEARCH_CONFIGS:-4r-4x1x1-45k,4r-2x2x1-45k,8r-2x2x2-45k}
        cbudget=$(($(left) - 30))
        if [[ $cbudget -gt 60 ]]; then
            export HALOX_BENCH_COMMAND="PROBE=gpusearch scripts/h200_probe.sh: bench/compare_gpu.py --configs $gs_cfg --seconds ${GPUSEARCH_SECONDS:-8}"
            t0=$(date +%s)
            (cd "$here" && python3 bench/compare_gpu.py --halox "$HALOX" --out "$gs_dir" \
                --budget "$cbudget" --seconds "${GPUSEARCH_SECONDS:-8}" --configs "$gs_cfg") \
                > "$OUT/logs/gpusearch_compare.log" 2>&1
            say "  gpusearch compare: rc $?, $(($(date +%s) - t0)) s (logs/gpusearch_compare.log)"
            tail -7 "$OUT/logs/gpusearch_compare.log" | cut -c1-170 | sed 's/^/    /' |
                tee -a "$OUT/summary.txt"
            unset HALOX_BENCH_COMMAND
        else
            say "  gpusearch compare: skipped (only $(left) s left)"
        fi
    fi
    if [[ $gs_parts == *" tests "* ]]; then
        gs_tests decomp 200 0 test_gpu_decomp
        gs_tests dd_search_np1 200 0 test_gpu_dd_search
        gs_tests dd_search_np2 250 2 test_gpu_dd_search_mpi
        gs_tests dd_search_np8 290 8 test_gpu_dd_search_mpi
    fi
    gs_w45=$OUT/logs/gs_w45k.gro
    gs_water45k() { # the 45k SPC/E box of the ab, ktimes and stages runs, built once
        [[ -f $gs_w45 ]] || "$HALOX" build water --model spce --atoms 45000 --seed 1 \
            -o "$gs_w45" > "$OUT/logs/gs_build.log" 2>&1
    }
    if [[ $gs_parts == *" ab "* ]]; then
        gs_water45k
        for v in "default:" "host:HALOX_GPU_DD=0" "nograph:HALOX_GPU_DD_GRAPH=0"; do
            name=${v%%:*}
            export HALOX_GPU_DD=1 HALOX_GPU_DD_GRAPH=1
            [[ -n ${v#*:} ]] && export "${v#*:}"
            probe "gs_ab_$name" 200 "${kpmpi[@]}" -np 4 "$HALOX" md --gpu -c "$gs_w45" \
                --dd 4x1x1 --steps "${GPUSEARCH_STEPS:-5000}" -o "$OUT/logs/gs_ab_$name.gro" \
                -g "$OUT/logs/gs_ab_$name.md.log"
            grep -hE "^search step:|^performance:" "$OUT/logs/gs_ab_$name.md.log" 2>/dev/null |
                cut -c1-250 | sed "s/^/    ab $name: /" | tee -a "$OUT/summary.txt"
            rm -f "$OUT/logs/gs_ab_$name.gro"
        done
        unset HALOX_GPU_DD HALOX_GPU_DD_GRAPH
    fi
    if [[ $gs_parts == *" ktimes "* ]]; then
        # every kernel of the device parts timed (HALOX_GPU_DD_KTIMES=1: direct launches, an
        # event after each; rank 0's table at the end of its log), 4x1x1 and 2x2x1
        gs_water45k
        export HALOX_GPU_DD_KTIMES=1
        for dd in 4x1x1 2x2x1; do
            probe "gs_ktimes_$dd" 200 "${kpmpi[@]}" -x HALOX_GPU_DD_KTIMES -np 4 "$HALOX" md \
                --gpu -c "$gs_w45" --dd "$dd" --steps "${GPUSEARCH_STEPS:-5000}" \
                -o "$OUT/logs/gs_ktimes_$dd.gro" -g "$OUT/logs/gs_ktimes_$dd.md.log"
            grep -hE "device search step by kernel|(^|\] ) +(k_[a-z0-9_]+|message) " \
                "$OUT/logs/probe_gs_ktimes_$dd.log" 2>/dev/null | cut -c1-200 |
                sed "s/^/    ktimes $dd: /" | tee -a "$OUT/summary.txt"
            rm -f "$OUT/logs/gs_ktimes_$dd.gro"
        done
        unset HALOX_GPU_DD_KTIMES
    fi
    if [[ $gs_parts == *" stages "* ]]; then
        # the pair search's device time by stage in a decomposed run (HALOX_GPU_SEARCH_TIMING=1:
        # direct launches, events between the stages; each domain's line at the end of the
        # log) and the step graph's captures (defaults otherwise), 4x1x1
        gs_water45k
        export HALOX_GPU_SEARCH_TIMING=1
        probe gs_stages_4x1x1 200 "${kpmpi[@]}" -x HALOX_GPU_SEARCH_TIMING -np 4 "$HALOX" md \
            --gpu -c "$gs_w45" --dd 4x1x1 --steps "${GPUSEARCH_STEPS:-5000}" \
            -o "$OUT/logs/gs_stages.gro" -g "$OUT/logs/gs_stages_4x1x1.md.log"
        unset HALOX_GPU_SEARCH_TIMING
        grep -hE "pair search by stage|step graph:|search step:" "$OUT/logs/gs_stages_4x1x1.md.log" \
            "$OUT/logs/probe_gs_stages_4x1x1.log" 2>/dev/null | cut -c1-260 |
            sed "s/^/    stages 4x1x1: /" | tee -a "$OUT/summary.txt"
        rm -f "$OUT/logs/gs_stages.gro"
    fi
    if [[ $gs_parts == *" nstlist "* ]]; then
        # the decomposed step against the pair-list interval: halox md --gpu on the 45k box with
        # its defaults and with --nstlist N (GPUSEARCH_NSTLIST, default "40 50 60 80 100"), on
        # GPUSEARCH_NST_CONFIGS (default "4:4x1x1 4:2x2x1 8:2x2x2"), alternating order per
        # config; a row per run: ns/day with every step counted, us per step, the search step
        # (us per search, slowest rank), the plain step (us per step less the searches' share),
        # the interval and outer radius. What the automatic interval of a decomposed run is
        # fitted to (src/mdrun/list_setup.c). JSON: $gs_dir/nstlist.json.
        gs_water45k
        nrows=$OUT/logs/gs_nstlist_rows.txt
        : > "$nrows"
        k=0
        for cfg in ${GPUSEARCH_NST_CONFIGS:-4:4x1x1 4:2x2x1 8:2x2x2}; do
            np=${cfg%%:*} dd=${cfg#*:}
            list="default ${GPUSEARCH_NSTLIST:-40 50 60 80 100}"
            k=$((k + 1))
            [[ $((k % 2)) -eq 0 ]] && list=$(echo "$list" | tr ' ' '\n' | tac | tr '\n' ' ')
            for c in $list; do
                if [[ $(left) -lt 25 ]]; then
                    say "    nstlist $dd $c: skipped (the call's time is spent)"
                    continue
                fi
                extra=()
                [[ $c != default ]] && extra=(--nstlist "$c")
                nm=gs_nst_${dd}_$c
                timeout -s KILL 90 "${pmpi[@]}" -np "$np" "$HALOX" md --gpu -c "$gs_w45" \
                    --dd "$dd" --steps "${GPUSEARCH_NST_STEPS:-6000}" "${extra[@]}" \
                    -e "$OUT/logs/$nm.jsonl" -o "$OUT/logs/$nm.gro" -g "$OUT/logs/$nm.md.log" \
                    > "$OUT/logs/$nm.out" 2>&1
                rc=$?
                rm -f "$OUT/logs/$nm.gro"
                python3 - "$OUT/logs/$nm" "$np" "$dd" "$c" "$rc" "$nrows" << 'PY' |
import json, re, sys
base, np_, dd, c, rc, rows = sys.argv[1:7]
run, perf, srch = {}, None, None
try:
    run = json.loads(open(base + ".jsonl").readline())["run"]
except Exception:
    pass
try:
    log = open(base + ".md.log").read()
    m = re.search(r"^performance: ([0-9.]+) ns/day, ([0-9.]+) us/step", log, re.M)
    perf = (float(m.group(1)), float(m.group(2))) if m else None
    m = re.search(r"^search step: ([0-9.]+) us per search", log, re.M)
    srch = float(m.group(1)) if m else None
except OSError:
    pass
n = run.get("nstlist")
plain = perf[1] - srch / n if perf and srch is not None and n else None
r = {"ranks": int(np_), "dd": dd, "asked": c, "rc": int(rc), "nstlist": n,
     "rlist_nm": run.get("rlist_nm"), "automatic": run.get("nstlist_automatic"),
     "ns_per_day": perf[0] if perf else None, "us_per_step": perf[1] if perf else None,
     "search_us": srch, "plain_step_us": plain}
with open(rows, "a") as fo:
    fo.write(json.dumps(r) + "\n")
f = lambda v, s: format(v, s) if isinstance(v, (int, float)) else "-"
print(f"    nstlist {dd} {c:>7s}: rc {rc}, nstlist {n}, rlist {f(r['rlist_nm'], '.3f')}, "
      f"{f(r['ns_per_day'], '.1f')} ns/day, {f(r['us_per_step'], '.1f')} us/step, search "
      f"{f(srch, '.0f')} us, plain {f(plain, '.1f')} us")
PY
                    tee -a "$OUT/summary.txt"
            done
        done
        python3 - "$nrows" "$gs_dir/nstlist.json" "${HALOX_GIT_REVISION:-unknown}" << 'PY'
import json, sys, time
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
json.dump({"meta": {"git_revision": sys.argv[3],
                    "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "what": "halox md --gpu, 45k SPC/E, ranks on one GPU under MPS (env.txt): "
                            "defaults against --nstlist N; ns/day with every step counted"},
           "runs": rows}, open(sys.argv[2], "w"), indent=1)
PY
    fi
    # the summary: per configuration the figures and the issue's targets; the A/B runs
    python3 - "$gs_dir" "$OUT/logs" "$here" << 'PY' 2>&1 | tee -a "$OUT/summary.txt"
import json, os, sys
d, logs, here = sys.argv[1:4]
sys.path.insert(0, os.path.join(here, "bench"))
import compare_gpu  # noqa: E402
try:
    cmpj = json.load(open(os.path.join(d, "compare.json")))
except (OSError, ValueError):
    cmpj = {"meta": {}, "runs": [], "comparison": []}
# issue 27's targets (every step counted, 45k on one H200 under MPS)
TARGET = {4: {"ns_per_day": 1077, "over_gromacs": 1.9, "search_us": 300}, 8: {"ns_per_day": 900}}
PARTS = ["migration", "topology_plan", "halo_setup", "local_set_upload", "halo_x_pair_search",
         "halo_x", "device_migration", "device_local_set", "device_plan_maps", "counts_reduction"]
out = {"meta": cmpj.get("meta", {}), "targets": {str(k): v for k, v in TARGET.items()},
       "configs": [], "ab": []}
print("  gpusearch: halox md --gpu (defaults) / GROMACS, ns/day with every step counted; halox's "
      "search step, us per search (slowest rank per part)")
for c in cmpj.get("comparison", []):
    h = next((r for r in cmpj.get("runs", []) if r.get("config") == c["config"]
              and r.get("code") == "halox"), {})
    t = TARGET.get(c["ranks"], {})
    e = {"config": c["config"], "ranks": c["ranks"], "dd": c["dd"],
         "halox_ns_per_day": c.get("halox_ns_per_day"),
         "gromacs_ns_per_day": c.get("gromacs_ns_per_day"),
         "halox_over_gromacs": c.get("halox_over_gromacs"),
         "halox_nstlist": c.get("halox_nstlist"), "gromacs_nstlist": c.get("gromacs_nstlist"),
         "search_step_us": h.get("search_step_us"), "search_step_on": h.get("search_step_on"),
         "search_step_parts_us": h.get("search_step_parts_us"),
         "slow_paths": [h.get("search_step_retries"), h.get("search_step_halo_updates")]}
    met = {}
    if "ns_per_day" in t and e["halox_ns_per_day"]:
        met["ns_per_day"] = e["halox_ns_per_day"] >= t["ns_per_day"]
    if "over_gromacs" in t and e["halox_over_gromacs"]:
        met["over_gromacs"] = e["halox_over_gromacs"] >= t["over_gromacs"]
    if "search_us" in t and e["search_step_us"]:
        met["search_us"] = e["search_step_us"] <= t["search_us"]
    e["targets_met"] = met
    out["configs"].append(e)
    f = lambda v, fmt: format(v, fmt) if isinstance(v, (int, float)) else "-"
    p = e["search_step_parts_us"] or {}
    print(f"    {c['config']:14s} halox {f(e['halox_ns_per_day'], '.0f')} GROMACS "
          f"{f(e['gromacs_ns_per_day'], '.0f')} ratio {f(e['halox_over_gromacs'], '.2f')} "
          f"(nstlist {f(e['halox_nstlist'], 'd')}/{f(e['gromacs_nstlist'], 'd')}); search "
          f"{f(e['search_step_us'], '.0f')} us on the {e['search_step_on']}, slow paths "
          f"{e['slow_paths']}; targets {met or '-'}")
    print("      parts: " + ", ".join(f"{k} {f(p.get(k), '.0f')}" for k in PARTS if k in p))
for name in ("default", "host", "nograph"):
    path = os.path.join(logs, f"gs_ab_{name}.md.log")
    if not os.path.exists(path):
        continue
    r = compare_gpu.parse_halox_log(open(path, errors="replace").read())
    r["variant"] = name
    out["ab"].append(r)
    print(f"    ab 4x1x1 {name:8s}: {r.get('ns_per_day', 0):.0f} ns/day, search "
          f"{r.get('search_step_us', 0):.0f} us on the {r.get('search_step_on')}: "
          + ", ".join(f"{k} {v:.0f}" for k, v in (r.get("search_step_parts_us") or {}).items()))
with open(os.path.join(d, "gpusearch.json.tmp"), "w") as fh:
    json.dump(out, fh, indent=1)
os.replace(os.path.join(d, "gpusearch.json.tmp"), os.path.join(d, "gpusearch.json"))
print(f"    -> {os.path.join(d, 'gpusearch.json')}")
PY
fi

# roofab2 (issue 28, second round): the new defaults (comb-2hs, unrolled update) and the second
# round's variants (docs/design/gpu-engine.md, "Second round"; `pdl`: HALOX_GPU_PDL=1, "Round-2
# variants", also in ROOFAB2_ALL), in one call of <= 8 minutes:
#  1. the GPU tests (test_gpu_nb runs every pair kernel and prune variant itself; test_gpu_update
#     the update's): under the defaults, then test_gpu_md/ethanol/engine_np1 with every variant
#     on (ROOFAB2_ALL); MPS is off from here on (one process per test);
#  2. gpu_md_bench per variant (ROOFAB2_VARIANTS, NAME:VAR=VALUE,...) at ROOFAB2_ATOMS, nstlist
#     20 with 4 prune parts and the engine's inner tolerance, then 45k again ROOFAB2_REPS - 1
#     times, alternating the variants; each run also prints the step's breakdown (local work,
#     update, rest); then ROOFAB2_CFG_VARIANT at nstlist 40 and 100 (45k, 180k);
#  3. halox bench md (the engine, every step counted) with the defaults and with ROOFAB2_ALL;
#  4. ncu --set full (MPS stopped) of k_nb_2h, k_update and k_prune at 45k, step 10, under the
#     defaults and under ROOFAB2_ALL, stall summaries by scripts/ncu_stalls.py; MPS restarted;
#  5. GROMACS (-nstlist 100, bench/gmx_gpu.py) beside `halox md --gpu` through
#     bench/compare_gpu.py (1gpu-45k/180k/360k) with ROOFAB2_COMPARE_ENV (default: the
#     defaults), in what is left of the call.
# A table last: per variant and size the median step, its breakdown, ns/day, pair kernel, prune.
if [[ " $probes " == *" roofab2 "* ]]; then
    echo quit | nvidia-cuda-mps-control > /dev/null 2>&1
    sleep 1
    rev=${HALOX_GIT_REVISION:-unknown}
    itol=0.00005 # the engine's inner tolerance: 0.005 x HX_MD_PRUNE_TOLERANCE_FRACTION
    all_spec=${ROOFAB2_ALL:-HALOX_GPU_NB_KERNEL=comb-2hsn,HALOX_GPU_PRUNE=fast,HALOX_GPU_PRUNE_AT=update,HALOX_GPU_UPDATE_EARLY=1,HALOX_GPU_KE_DEFER=1,HALOX_GPU_PDL=1}
    IFS=, read -r -a all_env <<< "$all_spec"
    t0=$(date +%s)
    (cd "$BUILD" && timeout 200 ctest -R 'test_gpu_(nb|update|md|ethanol|engine_np1)$' \
        --output-on-failure --timeout 150) > "$OUT/logs/roofab2_ctest_defaults.log" 2>&1
    say "  roofab2 tests, defaults ($(($(date +%s) - t0)) s): $(grep -E 'tests passed|tests failed' "$OUT/logs/roofab2_ctest_defaults.log" | tail -1)"
    grep -hE "^ *[0-9]+/[0-9]+ Test|FAIL" "$OUT/logs/roofab2_ctest_defaults.log" | cut -c1-150 |
        head -12 | sed 's/^/    /' | tee -a "$OUT/summary.txt"
    t0=$(date +%s)
    (cd "$BUILD" && env "${all_env[@]}" timeout 170 ctest -R 'test_gpu_(md|ethanol|engine_np1)$' \
        --output-on-failure --timeout 150) > "$OUT/logs/roofab2_ctest_all.log" 2>&1
    say "  roofab2 tests, ${all_env[*]} ($(($(date +%s) - t0)) s): $(grep -E 'tests passed|tests failed' "$OUT/logs/roofab2_ctest_all.log" | tail -1)"
    grep -hE "^ *[0-9]+/[0-9]+ Test|FAIL|drift" "$OUT/logs/roofab2_ctest_all.log" | cut -c1-150 |
        head -12 | sed 's/^/    /' | tee -a "$OUT/summary.txt"
    variants=${ROOFAB2_VARIANTS:-"base:HALOX_GPU_NB_KERNEL=comb-2hs comb:HALOX_GPU_NB_KERNEL=comb 2hsn:HALOX_GPU_NB_KERNEL=comb-2hsn pfast:HALOX_GPU_PRUNE=fast pupd:HALOX_GPU_PRUNE_AT=update pupdf:HALOX_GPU_PRUNE_AT=update,HALOX_GPU_PRUNE=fast ked:HALOX_GPU_KE_DEFER=1 upd2:HALOX_GPU_KE_DEFER=1,HALOX_GPU_UPDATE_EARLY=1 pdl:HALOX_GPU_PDL=1 all:$all_spec"}
    for rep in $(seq 1 "${ROOFAB2_REPS:-3}"); do
        for spec in $variants; do
            v=${spec%%:*} envs=()
            [[ $spec == *:* ]] && IFS=, read -r -a envs <<< "${spec#*:}"
            atoms=45000
            [[ $rep -eq 1 ]] && atoms=${ROOFAB2_ATOMS:-45000,180000,360000}
            probe roofab2_${v}_$rep 120 env "${envs[@]}" "$BUILD/tests/gpu_md_bench" \
                --atoms "$atoms" --steps "${ROOFAB2_STEPS:-3000}" --warmup 300 \
                --configs 20:4:$itol --json "$RES/roofab2_${v}_$rep.json" --git-revision "$rev"
            grep -E "^[0-9]+ +20 " "$OUT/logs/probe_roofab2_${v}_$rep.log" | sed "s/^/    $v $rep: /" |
                tee -a "$OUT/summary.txt"
        done
    done
    # the search interval with the variant expected best (45k, 180k; every step counted)
    cfgv=${ROOFAB2_CFG_VARIANT:-all}
    cspec=$(echo "$variants" | tr ' ' '\n' | grep "^$cfgv:" | head -1)
    envs=()
    [[ $cspec == *:* ]] && IFS=, read -r -a envs <<< "${cspec#*:}"
    probe roofab2_${cfgv}_cfg 120 env "${envs[@]}" "$BUILD/tests/gpu_md_bench" --atoms 45000,180000 \
        --steps "${ROOFAB2_STEPS:-3000}" --warmup 300 \
        --configs "${ROOFAB2_CONFIGS:-40:4:$itol,100:4:$itol}" \
        --json "$RES/roofab2_${cfgv}_cfg.json" --git-revision "$rev"
    grep -E "^[0-9]+ +[0-9]+ +[0-9]+ +1\.[0-9]" "$OUT/logs/probe_roofab2_${cfgv}_cfg.log" |
        sed "s/^/    $cfgv cfg: /" | tee -a "$OUT/summary.txt"
    for spec in "defaults:HALOX_GPU_NB_KERNEL=comb-2hs" "all:$all_spec"; do
        v=${spec%%:*} envs=()
        IFS=, read -r -a envs <<< "${spec#*:}"
        export HALOX_BENCH_COMMAND="${spec#*:} halox bench md --atoms ${ROOFAB2_ATOMS:-45000,180000,360000} --backends gpu --steps 3000 --warmup 300"
        probe roofab2_md_$v 150 "${pmpi[@]}" -np 1 env "${envs[@]}" "$HALOX" bench md \
            --atoms "${ROOFAB2_ATOMS:-45000,180000,360000}" --backends gpu --steps 3000 \
            --warmup 300 -o "$RES/roofab2_md_$v.json"
        grep -h "us/step" "$OUT/logs/probe_roofab2_md_$v.log" | sed "s/^/    md $v: /" |
            tee -a "$OUT/summary.txt"
        unset HALOX_BENCH_COMMAND
    done
    # ncu needs MPS off (it refuses MPS clients): off since the start of this probe
    if command -v ncu > /dev/null && [[ $(left) -gt 150 ]]; then
        echo quit | nvidia-cuda-mps-control > /dev/null 2>&1
        for spec in "defaults:HALOX_GPU_NB_KERNEL=comb-2hs" "all:$all_spec"; do
            v=${spec%%:*} envs=()
            IFS=, read -r -a envs <<< "${spec#*:}"
            # without a graph a step launches k_home_terms, k_prune, k_nb_2h, k_update: the
            # three named ones of steps 22 and 23, after the second search (step 20), whose
            # entries have the steady state's length (the first search's hold at most 16 items:
            # 10,302 blocks at 45k against 7,177; docs/design/gpu-engine.md, "The kernels'
            # instruction counts")
            ncu_kernels "roofab2_ncu_$v" 100 "ncu $v" "k_nb_2h k_update k_prune" 63 6 30 \
                "${envs[@]}"
        done
    else
        say "  roofab2 ncu: skipped (no ncu, or only $(left) s left)"
    fi
    nvidia-cuda-mps-control -d >> "$OUT/logs/mps.log" 2>&1 && say "  roofab2: MPS restarted"
    # GROMACS beside halox md --gpu (bench/compare_gpu.py, one GPU, every step counted, GROMACS
    # with -nstlist 100; .tools/gmx-cuda-sm90.tar.xz or HALOX_GMX_TARBALL carried with the call)
    cenv=(${ROOFAB2_COMPARE_ENV:-HALOX_GPU_NB_KERNEL=comb-2hs})
    gt=$here/../../.tools/gmx-cuda-sm90.tar.xz
    [[ -z ${HALOX_GMX_TARBALL:-} && ! -f $here/.tools/gmx-cuda-sm90.tar.xz && -f $gt ]] &&
        export HALOX_GMX_TARBALL=$gt
    cbudget=$(($(left) - 30))
    if [[ $cbudget -gt 60 ]]; then
        export HALOX_BENCH_COMMAND="${cenv[*]} bench/compare_gpu.py --configs ${ROOFAB2_COMPARE_CONFIGS:-1gpu-45k,1gpu-180k,1gpu-360k}"
        (cd "$here" && env "${cenv[@]}" python3 bench/compare_gpu.py --halox "$HALOX" \
            --out "$RES/compare" --budget "$cbudget" --seconds "${ROOFAB2_COMPARE_SECONDS:-8}" \
            --configs "${ROOFAB2_COMPARE_CONFIGS:-1gpu-45k,1gpu-180k,1gpu-360k}") \
            > "$OUT/logs/roofab2_compare.log" 2>&1
        say "  compare (${cenv[*]}): rc $?"
        tail -8 "$OUT/logs/roofab2_compare.log" | sed 's/^/    /' | tee -a "$OUT/summary.txt"
        unset HALOX_BENCH_COMMAND
    else
        say "  compare: skipped (only $(left) s left)"
    fi
    say "  roofab2: gpu_md_bench (us per step: median, local work, update, rest; ns/day with searches; pair kernel, prune alone):"
    for spec in $variants; do
        v=${spec%%:*}
        for rep in $(seq 1 "${ROOFAB2_REPS:-3}"); do
            grep -E "^[0-9]+ +20 " "$OUT/logs/probe_roofab2_${v}_$rep.log" 2>/dev/null |
                awk -v v="$v" -v r="$rep" '{ printf "    %-6s %d %7d: median %6.1f = local %6.1f + update %5.1f + rest %5.1f; %6.0f ns/day; pair %6.1f, prune %5.1f\n", v, r, $1, $5, $14, $15, $16, $8, $9, $11 }' |
                tee -a "$OUT/summary.txt"
        done
    done
fi

# nbvar (issue 28, third round; issue 27's decomposed runs): the pair kernel's register cap and
# the next item loaded ahead, and the entries cut for a share of the GPU (docs/design/
# gpu-engine.md, "Third round"), in one call of <= 9 minutes after the suite (--tests):
#  0. the engine's GPU tests with NBVAR_TEST_ENV (default: the defaults; NBVAR_TESTS=0 skips);
#  1. halox md --gpu on the 45k box per NBVAR_DD_CONFIGS (RANKS:GRID, 1:1x1x1 for one domain;
#     default 4 ranks 4x1x1 and 2x2x1, 8 ranks 2x2x2) under MPS, per NBVAR_DD_VARIANTS (default:
#     the defaults, comb-2hs at 16 blocks (the default before 2026-12-06), the rolling prune in 4
#     and in 12 parts), every step counted (the md log's performance line, its search step),
#     each under a launcher timeout;
#  2. gpu_md_bench (one GPU, one process, nstlist 20, 4 prune parts, the engine's inner
#     tolerance) per variant (NBVAR_VARIANTS, NAME:VAR=VALUE,...), at 45k and 180k, then 45k
#     again, alternating the variants; each run prints the step's median, its breakdown and the
#     pair kernel alone (NBVAR_VARIANTS=- skips). MPS stays on throughout (every variant alike).
if [[ " $probes " == *" nbvar "* ]]; then
    rev=${HALOX_GIT_REVISION:-unknown}
    itol=0.00005 # the engine's inner tolerance: 0.005 x HX_MD_PRUNE_TOLERANCE_FRACTION
    # the engine's tests with the variant expected best (the suite ran the defaults)
    if [[ ${NBVAR_TESTS:-1} != 0 ]]; then
        t0=$(date +%s)
        (cd "$BUILD" && env ${NBVAR_TEST_ENV:-} \
            timeout -s KILL 200 ctest -R 'test_gpu_(md|ethanol|engine_np1|dd_md_np4|dd_md_np8)$' \
            --output-on-failure --timeout 150) > "$OUT/logs/nbvar_ctest.log" 2>&1
        say "  nbvar tests, ${NBVAR_TEST_ENV:-defaults} ($(($(date +%s) - t0)) s): $(grep -E 'tests passed|tests failed' "$OUT/logs/nbvar_ctest.log" | tail -1)"
    fi
    nb_w45=$OUT/logs/nbvar_w45k.gro
    "$HALOX" build water --model spce --atoms 45000 --seed 1 -o "$nb_w45" \
        > "$OUT/logs/nbvar_build.log" 2>&1
    ddv=${NBVAR_DD_VARIANTS:-"def: hs16:HALOX_GPU_NB_KERNEL=comb-2hs,HALOX_GPU_NB_RESIDENT=16 p4:HALOX_GPU_PRUNE_PARTS=4 p12:HALOX_GPU_PRUNE_PARTS=12"}
    for cfg in ${NBVAR_DD_CONFIGS:-4:4x1x1 4:2x2x1 8:2x2x2}; do
        np=${cfg%%:*} dd=${cfg#*:} ddarg=()
        [[ $dd != 1x1x1 ]] && ddarg=(--dd "$dd")
        for spec in $ddv; do
            v=${spec%%:*} envs=()
            [[ -n ${spec#*:} ]] && IFS=, read -r -a envs <<< "${spec#*:}"
            nm=nbvar_md_${dd}_$v
            if [[ $(left) -lt 30 ]]; then
                say "    $nm: skipped (the call's time is spent)"
                continue
            fi
            t0=$(date +%s)
            timeout -s KILL 90 "${pmpi[@]}" -np "$np" env "${envs[@]}" "$HALOX" md --gpu \
                -c "$nb_w45" "${ddarg[@]}" --steps "${NBVAR_MD_STEPS:-12000}" \
                -o "$OUT/logs/$nm.gro" -g "$OUT/logs/$nm.md.log" > "$OUT/logs/$nm.out" 2>&1
            rc=$?
            rm -f "$OUT/logs/$nm.gro"
            perf=$(grep -h "^performance:" "$OUT/logs/$nm.md.log" 2>/dev/null | cut -c14-60)
            srch=$(grep -h "^search step:" "$OUT/logs/$nm.md.log" 2>/dev/null | cut -c14-40)
            say "    md $dd $v (${spec#*:}): rc $rc, $(($(date +%s) - t0)) s; $perf; search $srch"
        done
    done
    variants=${NBVAR_VARIANTS:-"base: hs16:HALOX_GPU_NB_KERNEL=comb-2hs,HALOX_GPU_NB_RESIDENT=16"}
    [[ $variants == - ]] && variants=""
    for rep in 1 2; do
        for spec in $variants; do
            v=${spec%%:*} envs=()
            [[ -n ${spec#*:} ]] && IFS=, read -r -a envs <<< "${spec#*:}"
            atoms=45000
            [[ $rep -eq 1 ]] && atoms=45000,180000
            probe nbvar_${v}_$rep 90 env "${envs[@]}" "$BUILD/tests/gpu_md_bench" \
                --atoms "$atoms" --steps "${NBVAR_STEPS:-3000}" --warmup 300 \
                --configs 20:4:$itol --json "$RES/nbvar_${v}_$rep.json" --git-revision "$rev"
        done
    done
    [[ -n $variants ]] && say "  nbvar: gpu_md_bench (us per step: median, local work, update, rest; ns/day with searches; pair kernel, prune alone):"
    for spec in $variants; do
        v=${spec%%:*}
        for rep in 1 2; do
            grep -E "^[0-9]+ +20 " "$OUT/logs/probe_nbvar_${v}_$rep.log" 2>/dev/null |
                awk -v v="$v" -v r="$rep" '{ printf "    %-6s %d %7d: median %6.1f = local %6.1f + update %5.1f + rest %5.1f; %6.0f ns/day; pair %6.1f, prune %5.1f\n", v, r, $1, $5, $14, $15, $16, $8, $9, $11 }' |
                tee -a "$OUT/summary.txt"
        done
    done
fi

# owner: what failed on two GPUs before the GPU context (issue 25), run again. One rank: bench md
# with every GPU backend (gpu-direct had no IPC handle for its empty force slots). With two or
# more GPUs: the exchange on 2x1x1 with one rank per GPU (hung in gpu-mpi), under MPS and
# without, with the ranks' GPUs swapped (--gpu-id 1,0) and both on GPU 0 (--gpu-id 0,0: two
# ranks share it, by UUID, so the nvshmem backend needs MPS), and the one-rank context test with
# its context on GPU 1 while GPU 0 is current. Each line of the summary says what ran where.
if [[ $probes == *owner* ]]; then
    probe owner_md_1rank 150 "${pmpi[@]}" -np 1 "$HALOX" bench md --atoms 45000 \
        --backends gpu-mpi,gpu-direct,nvshmem --steps 500 --warmup 100 \
        -o "$RES/owner_md_1rank.json"
    grep -hE "us/step|skipped|error" "$OUT/logs/probe_owner_md_1rank.log" |
        sed 's/^/    1 rank: /' | tee -a "$OUT/summary.txt"
    if [[ $(nvidia-smi -L 2>/dev/null | grep -c '^GPU ') -ge 2 ]]; then
        ox() { # name extra-arguments...
            local name=$1
            shift
            CUDA_VISIBLE_DEVICES=0,1 probe owner_x_$name 150 "${pmpi[@]}" -x CUDA_VISIBLE_DEVICES \
                -np 2 "$HALOX" bench exchange --dd 2x1x1 --atoms-per-domain 11000,45000 \
                --steps 500 --warmup 100 "$@" -o "$RES/owner_x_$name.json"
            grep -hE "^ *(gpu-mpi|gpu-direct|nvshmem)|rank 0:|error" \
                "$OUT/logs/probe_owner_x_$name.log" | sed "s/^/    $name: /" |
                tee -a "$OUT/summary.txt"
        }
        ox 2gpu_mps
        ox 2gpu_mps_swapped --gpu-id 1,0
        ox 1gpu_mps_shared --gpu-id 0,0
        echo quit | nvidia-cuda-mps-control > /dev/null 2>&1
        sleep 1
        ox 2gpu_nomps
        ox 1gpu_nomps_shared --gpu-id 0,0 # nvshmem refused (no MPS), the others run
        nvidia-cuda-mps-control -d > /dev/null 2>&1
        CUDA_VISIBLE_DEVICES=0,1 probe owner_context 120 "${pmpi[@]}" -x CUDA_VISIBLE_DEVICES \
            -np 1 "$BUILD/tests/test_gpu_context"
        grep -hE "rank 0|engine|FAIL|cases" "$OUT/logs/probe_owner_context.log" |
            sed 's/^/    context: /' | tee -a "$OUT/summary.txt"
    fi
fi

# waitcost: what bounding every wait costs (issues 25/26, docs/design/gpu-halo.md "The cost of the
# deadline"). The exchange with the deadlines at their defaults (HALOX_WAIT_TIMEOUT=60: host waits
# polled against the clock, the NVSHMEM device waits reading the clock every 16th poll, their
# deadline 30 s) against all of them off (HALOX_WAIT_TIMEOUT=0 and --timeout 0: blocking
# MPI_Waitall and cudaStreamSynchronize, no clock in the device polls), alternated on, off, on,
# off so that drift shows; 11k atoms per domain, 2x2x1 on 4 PEs and 2x2x2 on 8 under MPS, every
# backend; with two GPUs also 2x1x1 with one rank per GPU. The bar: nvshmem's exchange_us within
# 1 % of the run without deadlines. JSON: $RES/waitcost_*.json; the table in the summary.
if [[ $probes == *waitcost* ]]; then
    wcrun() { # name dd np on|off
        local name=$1 dd=$2 np=$3 t=-1
        export HALOX_WAIT_TIMEOUT=60
        if [[ $4 == off ]]; then
            export HALOX_WAIT_TIMEOUT=0
            t=0
        fi
        export HALOX_BENCH_COMMAND="HALOX_WAIT_TIMEOUT=$HALOX_WAIT_TIMEOUT mpirun -np $np halox bench exchange --dd $dd --atoms-per-domain 11000 --backends gpu-mpi,gpu-direct,nvshmem --steps $((2 * ps)) --warmup 200 --timeout $t"
        probe waitcost_$name 150 "${pmpi[@]}" -x HALOX_WAIT_TIMEOUT ${CUDA_VISIBLE_DEVICES:+-x CUDA_VISIBLE_DEVICES} \
            -np "$np" "$HALOX" bench exchange --dd "$dd" --atoms-per-domain 11000 \
            --backends gpu-mpi,gpu-direct,nvshmem --steps $((2 * ps)) --warmup 200 --timeout $t \
            -o "$RES/waitcost_$name.json"
        grep -hE "^ *(gpu-mpi|gpu-direct|nvshmem)|error" "$OUT/logs/probe_waitcost_$name.log" |
            sed "s/^/    waitcost $name: /" | tee -a "$OUT/summary.txt"
        unset HALOX_WAIT_TIMEOUT HALOX_BENCH_COMMAND
    }
    for rep in 1 2; do
        for mode in on off; do
            wcrun 2x2x1_$mode$rep 2x2x1 4 $mode
            wcrun 2x2x2_$mode$rep 2x2x2 8 $mode
        done
    done
    if [[ $(nvidia-smi -L 2>/dev/null | grep -c '^GPU ') -ge 2 ]]; then
        export CUDA_VISIBLE_DEVICES=0,1
        for rep in 1 2; do
            for mode in on off; do
                wcrun 2gpu_$mode$rep 2x1x1 2 $mode
            done
        done
        unset CUDA_VISIBLE_DEVICES
    fi
    python3 - "$RES" <<'PY' | tee -a "$OUT/summary.txt"
import glob, json, os, statistics, sys
rows = {}
for f in sorted(glob.glob(os.path.join(sys.argv[1], "waitcost_*.json"))):
    grid, mode = os.path.basename(f)[len("waitcost_"):-len(".json")].rsplit("_", 1)
    for r in json.load(open(f)).get("runs", []):
        rows.setdefault((grid, r["backend"]), {}).setdefault(mode.rstrip("0123456789"), []).append(
            r["exchange_us"])
print("    waitcost: exchange_us (median of the runs' medians), deadlines on against off")
for (grid, backend), d in sorted(rows.items()):
    if d.get("on") and d.get("off"):
        on, off = statistics.median(d["on"]), statistics.median(d["off"])
        print(f"    waitcost {grid:6s} {backend:12s} on {on:8.2f} us  off {off:8.2f} us  "
              f"cost {100 * (on - off) / off:+6.2f} %  (runs on {d['on']}, off {d['off']})")
PY
fi

# onemd (issue 26, one MD loop): tests/gpu_md_bench times the engine's step (hx_md_run with the
# engine's step timing) where it ran a loop of its own (tests/gpu_md_driver.c) before. Against
# ONEMD_BASE (default: main's commit d4934c8, the last with the loop), built side by side:
#  1. gpu_md_bench at 45k, nstlist 20, 4 prune parts at the engine's inner tolerance, base and
#     this tree alternated ONEMD_REPS (default 2) times; 180k once each; --no-graph once each;
#  2. halox bench md at 45k on one GPU, base and this tree: one domain's plain step is now
#     replayed from a CUDA graph (with the default gpu-mpi halo it was launched directly).
# A table last: per build the median step = local work + update + rest, the mean with searches
# and ns/day, the pair kernel alone; and bench md's us/step lines.
if [[ " $probes " == *" onemd "* ]]; then
    rev=${HALOX_GIT_REVISION:-unknown}
    itol=0.00005 # the engine's inner tolerance: 0.005 x HX_MD_PRUNE_TOLERANCE_FRACTION
    base_rev=$(cd "$here" && git rev-parse "${ONEMD_BASE:-d4934c8}" 2>/dev/null)
    bsrc=/tmp/halox-onemd-base bbuild=/tmp/halox-onemd-base-build
    rm -rf "$bsrc" && mkdir -p "$bsrc"
    if [[ -n $base_rev ]] && (cd "$here" && git archive "$base_rev") | tar -x -C "$bsrc" &&
        cmake -S "$bsrc" -B "$bbuild" $gen -DCMAKE_BUILD_TYPE=Release -DHALOX_WITH_CUDA=ON \
            -DHALOX_WITH_MPI=ON -DHALOX_WITH_NVSHMEM=${HALOX_NVSHMEM:-ON} \
            ${NVSHMEM_HOME_WHEEL:+-DNVSHMEM_HOME=$NVSHMEM_HOME_WHEEL} \
            ${prefix:+-DCMAKE_PREFIX_PATH=$prefix} > "$OUT/logs/onemd_base_configure.log" 2>&1 &&
        cmake --build "$bbuild" -j "$(nproc)" --target halox gpu_md_bench \
            > "$OUT/logs/onemd_base_build.log" 2>&1; then
        say "  onemd: base ${base_rev:0:10} built ($(elapsed) s)"
        onemd_bench() { # name build atoms extra-arguments...
            local name=$1 b=$2 atoms=$3
            shift 3
            probe onemd_$name 100 "$b/tests/gpu_md_bench" --atoms "$atoms" \
                --steps "${ONEMD_STEPS:-3000}" --warmup 300 --configs 20:4:$itol \
                --json "$RES/onemd_$name.json" --git-revision "$rev" "$@"
            grep -E "^[0-9]+ +20 " "$OUT/logs/probe_onemd_$name.log" | sed "s/^/    $name: /" |
                tee -a "$OUT/summary.txt"
        }
        for rep in $(seq 1 "${ONEMD_REPS:-2}"); do
            onemd_bench base_45k_$rep "$bbuild" 45000
            onemd_bench new_45k_$rep "$BUILD" 45000
        done
        onemd_bench base_180k "$bbuild" 180000
        onemd_bench new_180k "$BUILD" 180000
        onemd_bench base_nograph "$bbuild" 45000 --no-graph
        onemd_bench new_nograph "$BUILD" 45000 --no-graph
        for v in base new; do
            exe=$HALOX
            [[ $v == base ]] && exe=$bbuild/halox
            probe onemd_md_$v 120 "${pmpi[@]}" -np 1 "$exe" bench md --atoms 45000 \
                --backends gpu --steps 3000 --warmup 300 -o "$RES/onemd_md_$v.json"
            grep -h "us/step" "$OUT/logs/probe_onemd_md_$v.log" | sed "s/^/    md $v: /" |
                tee -a "$OUT/summary.txt"
        done
        say "  onemd: gpu_md_bench (us per step: median = local + update + rest; mean; ns/day; pair kernel):"
        for f in "$OUT"/logs/probe_onemd_*_45k_* "$OUT"/logs/probe_onemd_*_180k.log \
            "$OUT"/logs/probe_onemd_*_nograph.log; do
            [[ -f $f ]] || continue
            n=$(basename "$f" .log)
            grep -E "^[0-9]+ +20 " "$f" | awk -v n="${n#probe_onemd_}" '{ printf "    %-14s %7d: median %6.1f = local %6.1f + update %5.1f + rest %5.1f; mean %6.1f, %6.0f ns/day; pair %6.1f\n", n, $1, $5, $14, $15, $16, $6, $8, $9 }' |
                tee -a "$OUT/summary.txt"
        done
    else
        say "  onemd: base ${base_rev:-?} did not build (logs/onemd_base_*.log)"
    fi
fi

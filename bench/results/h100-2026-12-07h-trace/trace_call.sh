# One-off (sourced by scripts/h200.sh --exec; kept here as it ran, 07h): where the plain step of a decomposed run goes.
# halox-test (the NVSHMEM module's test hooks) runs `md --gpu` with its defaults on 45k water,
# 4 ranks 4x1x1 and 2x2x1 under MPS, HALOX_NVSHMEM_TRACE on: the coordinate and force kernels'
# %globaltimer stamps per PE (start, pulses sent and seen, end) over the last 4096 exchanges,
# lined up by scripts/nvshmem_trace.py; then `halox bench md` at 4x1x1 without the metrics'
# sampled steps (they launch directly) for the replayed step alone.
source "$here/scripts/h200_ab.sh"
mkdir -p "$OUT/trace"
for dd in 4x1x1 2x2x1; do
    [[ $(left) -lt 60 ]] && break
    t0=$(date +%s)
    rm -f /tmp/tr_$dd.*
    timeout -s KILL 100 "${ab_pmpi[@]}" -np 4 env HALOX_NVSHMEM_TRACE=/tmp/tr_$dd \
        "$BUILD/halox-test" md --gpu -c "$ab_w45" --dd "$dd" --steps 8000 \
        -o "$OUT/logs/tr_$dd.gro" -g "$OUT/logs/tr_$dd.md.log" > "$OUT/logs/tr_$dd.out" 2>&1
    rc=$?
    rm -f "$OUT/logs/tr_$dd.gro"
    say "  traced md $dd: rc $rc, $(($(date +%s) - t0)) s; $(grep -h '^performance:' "$OUT/logs/tr_$dd.md.log" | cut -c14-60)"
    ls -la /tmp/tr_$dd.* > "$OUT/logs/tr_${dd}_files.txt" 2>&1
    for inst in $(ls /tmp/tr_$dd.*.rank0.txt 2>/dev/null | sed "s|/tmp/tr_$dd\.\([0-9]*\)\.rank0\.txt|\1|"); do
        python3 "$here/scripts/nvshmem_trace.py" "/tmp/tr_$dd.$inst" \
            --json "$OUT/trace/trace_${dd}_$inst.json" > "$OUT/trace/trace_${dd}_$inst.txt" 2>&1
        say "    instance $inst:"
        sed 's/^/      /' "$OUT/trace/trace_${dd}_$inst.txt" | head -24 | tee -a "$summary"
        gzip -c /tmp/tr_$dd.$inst.rank0.txt > "$OUT/trace/tr_$dd.$inst.rank0.txt.gz"
    done
done
if [[ $(left) -gt 40 ]]; then
    t0=$(date +%s)
    timeout -s KILL 60 "${ab_pmpi[@]}" -np 4 "$HALOX" bench md --atoms 45000 --dd 4x1x1 \
        --backends gpu --nstlist 100 --steps 4000 --warmup 300 --nstmetrics 0 \
        -o "$OUT/results/bench_md_4x1x1_nometrics.json" > "$OUT/logs/bench_md_4x1x1_nometrics.out" 2>&1
    say "  bench md 4x1x1, no metrics: rc $?, $(($(date +%s) - t0)) s"
    grep -h "us/step" "$OUT/logs/bench_md_4x1x1_nometrics.out" | head -3 | cut -c1-200 | sed 's/^/    /' | tee -a "$summary"
fi

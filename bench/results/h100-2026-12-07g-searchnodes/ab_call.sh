# One-off (sourced by scripts/h200.sh --exec): the pair search with four graph nodes fewer
# (k_fill into k_bin's buckets, k_lb_work into k_sc_build, the status record written by the list build's last block and left
# fresh for the next search: no k_search_tail, no upload) against the same tree less base.patch
# (main at 2b193f5), alternated, 45k water, halox md --gpu defaults, every step counted; the
# pair search by stage (HALOX_GPU_SEARCH_TIMING=1) of both at 4x1x1 and on one GPU; one
# `halox bench md` at 4x1x1 for the plain step's local / non-local / non-overlap.
source "$here/scripts/h200_ab.sh"
ab_build_base "$here/base.patch"
for rep in 1 2; do
    for cfg in 4:4x1x1 1:1x1x1; do
        np=${cfg%%:*} dd=${cfg#*:}
        abrun "ab_${dd}_base$rep" "$np" "$dd" "$BASE" 20000
        abrun "ab_${dd}_new$rep" "$np" "$dd" "$HALOX" 20000
    done
done
abrun "ab_2x2x1_base1" 4 2x2x1 "$BASE" 20000
abrun "ab_2x2x1_new1" 4 2x2x1 "$HALOX" 20000
for cfg in 4:4x1x1 1:1x1x1; do
    np=${cfg%%:*} dd=${cfg#*:}
    abrun "st_${dd}_base" "$np" "$dd" "$BASE" 6000 -- HALOX_GPU_SEARCH_TIMING=1
    abrun "st_${dd}_new" "$np" "$dd" "$HALOX" 6000 -- HALOX_GPU_SEARCH_TIMING=1
done
ab_stages "$OUT/logs/st_*.out"
if [[ $(left) -gt 90 ]]; then
    t0=$(date +%s)
    timeout -s KILL 80 "${ab_pmpi[@]}" -np 4 "$HALOX" bench md --atoms 45000 --dd 4x1x1 \
        --backends gpu --nstlist 100 --steps 3000 --warmup 300 --nstmetrics 10 \
        -o "$OUT/results/bench_md_4x1x1.json" > "$OUT/logs/bench_md_4x1x1.out" 2>&1
    say "  bench md 4x1x1: rc $?, $(($(date +%s) - t0)) s"
    grep -h "local\|step" "$OUT/logs/bench_md_4x1x1.out" | head -12 | cut -c1-200 | sed 's/^/    /' | tee -a "$summary"
fi

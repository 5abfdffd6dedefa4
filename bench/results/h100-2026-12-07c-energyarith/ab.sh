# One-off (sourced by scripts/h200.sh --exec after the GPU suite): the energy kernel k_nb_2he
# with 1/r from one Newton step in double and its energies selected instead of branched, against
# the same tree less base.patch (main at 28576f1: k_nb_2he with the correctly rounded float 1/r
# and a branch per pair), alternated; halox md --gpu, 45k, every step an energy step and the
# defaults; then the one-GPU search step by stage.
bdir=/tmp/hx-base
rm -rf "$bdir" && mkdir -p "$bdir"
for p in CMakeLists.txt cmake src include app tests bench data examples scripts; do
    [[ -e $here/$p ]] && cp -a "$here/$p" "$bdir/"
done
t0=$(date +%s)
if (cd "$bdir" && patch -s -R -p1 < "$here/base.patch") > "$OUT/logs/base_patch.log" 2>&1 &&
    cmake -S "$bdir" -B "$bdir/build" $gen -DCMAKE_BUILD_TYPE=Release -DHALOX_WITH_CUDA=ON \
        -DHALOX_WITH_MPI=ON -DHALOX_WITH_NVSHMEM=${HALOX_NVSHMEM:-ON} \
        ${NVSHMEM_HOME_WHEEL:+-DNVSHMEM_HOME=$NVSHMEM_HOME_WHEEL} \
        ${prefix:+-DCMAKE_PREFIX_PATH=$prefix} > "$OUT/logs/base_configure.log" 2>&1 &&
    cmake --build "$bdir/build" -j "$(nproc)" --target halox_app > "$OUT/logs/base_build.log" 2>&1; then
    say "  base build ok ($(($(date +%s) - t0)) s)"
else
    say "  base build FAILED"; tail -20 "$OUT/logs/base_build.log" "$OUT/logs/base_patch.log" | tee -a "$summary"
fi
pmpi=(mpirun --allow-run-as-root --oversubscribe -x CUDA_MPS_PIPE_DIRECTORY
    -x CUDA_MPS_LOG_DIRECTORY -x NVSHMEM_DISABLE_NVLS -x NVSHMEM_BOOTSTRAP_MPI_PLUGIN
    -x LD_LIBRARY_PATH -x HALOX_GIT_REVISION --bind-to none)
w45=$OUT/logs/ab_w45k.gro
w180=$OUT/logs/ab_w180k.gro
"$HALOX" build water --model spce --atoms 45000 --seed 1 -o "$w45" > "$OUT/logs/ab_build.log" 2>&1
"$HALOX" build water --model spce --atoms 180000 --seed 1 -o "$w180" >> "$OUT/logs/ab_build.log" 2>&1
abrun() { # name np dd binary gro steps [args...] -- [VAR=value...]
    local nm=$1 np=$2 dd=$3 bin=$4 gro=$5 steps=$6
    shift 6
    local extra=()
    while [[ $# -gt 0 && $1 != -- ]]; do extra+=("$1"); shift; done
    [[ $# -gt 0 ]] && shift
    if [[ $(left) -lt 30 ]]; then say "    $nm: skipped (the call's time is spent)"; return; fi
    local t0=$(date +%s)
    local ddarg=(--dd "$dd")
    [[ $dd == 1x1x1 ]] && ddarg=()
    timeout -s KILL 100 "${pmpi[@]}" -np "$np" env X=1 "$@" "$bin" md --gpu -c "$gro" "${ddarg[@]}" \
        --steps "$steps" "${extra[@]}" -o "$OUT/logs/$nm.gro" -g "$OUT/logs/$nm.md.log" > "$OUT/logs/$nm.out" 2>&1
    local rc=$?
    rm -f "$OUT/logs/$nm.gro"
    local perf srch nst gr
    perf=$(grep -h "^performance:" "$OUT/logs/$nm.md.log" 2>/dev/null | cut -c14-60)
    srch=$(grep -h "^search step:" "$OUT/logs/$nm.md.log" 2>/dev/null | cut -c14-40)
    gr=$(grep -h "^step graph:" "$OUT/logs/$nm.md.log" 2>/dev/null | sed 's/(again.*launches.), //' | cut -c13-90)
    nst=$(grep -ho "nstlist [0-9]* -> [0-9]*\|nstlist [0-9]*" "$OUT/logs/$nm.md.log" 2>/dev/null | head -1)
    say "    $nm: rc $rc, $(($(date +%s) - t0)) s; $nst; $perf; search $srch; graph $gr"
}
for rep in 1 2; do
    abrun "ab_45k_e1_base$rep" 1 1x1x1 "$bdir/build/halox" "$w45" 3000 --nstenergy 1
    abrun "ab_45k_e1_new$rep" 1 1x1x1 "$HALOX" "$w45" 3000 --nstenergy 1
done
for rep in 1 2; do
    abrun "ab_45k_base$rep" 1 1x1x1 "$bdir/build/halox" "$w45" 20000
    abrun "ab_45k_new$rep" 1 1x1x1 "$HALOX" "$w45" 20000
done
abrun "ab_180k_e1_base1" 1 1x1x1 "$bdir/build/halox" "$w180" 1000 --nstenergy 1
abrun "ab_180k_e1_new1" 1 1x1x1 "$HALOX" "$w180" 1000 --nstenergy 1
rm -f "$w180"
# the one-GPU search step by stage (direct launches, an event after each stage)
abrun "st_45k_new" 1 1x1x1 "$HALOX" "$w45" 5000 -- HALOX_GPU_SEARCH_TIMING=1
grep -h 'pair search by stage' "$OUT/logs/st_45k_new.out" | head -1 | cut -c1-300 | sed 's/^/      /' | tee -a "$summary" > /dev/null

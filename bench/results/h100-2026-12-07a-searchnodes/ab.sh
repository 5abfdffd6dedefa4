# One-off (untracked; sourced by scripts/h200.sh --exec): the search step with fewer host
# collectives and copy nodes, the pulse ranks by block and k_fin_b in one pass (this tree)
# against the same tree less base.patch, alternated, 45k, halox md --gpu defaults, every step
# counted; then the pair-list interval of decomposed runs swept (this tree), for the search
# cost the interval rule assumes.
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
"$HALOX" build water --model spce --atoms 45000 --seed 1 -o "$w45" > "$OUT/logs/ab_build.log" 2>&1
abrun() { # name np dd binary steps [args...] -- [VAR=value...]
    local nm=$1 np=$2 dd=$3 bin=$4 steps=$5
    shift 5
    local extra=()
    while [[ $# -gt 0 && $1 != -- ]]; do extra+=("$1"); shift; done
    [[ $# -gt 0 ]] && shift
    if [[ $(left) -lt 40 ]]; then
        say "    $nm: skipped (the call's time is spent)"
        return
    fi
    local t0=$(date +%s)
    local ddarg=(--dd "$dd")
    [[ $dd == 1x1x1 ]] && ddarg=()
    timeout -s KILL 100 "${pmpi[@]}" -np "$np" env X=1 "$@" "$bin" md --gpu -c "$w45" "${ddarg[@]}" \
        --steps "$steps" "${extra[@]}" -o "$OUT/logs/$nm.gro" -g "$OUT/logs/$nm.md.log" > "$OUT/logs/$nm.out" 2>&1
    local rc=$?
    rm -f "$OUT/logs/$nm.gro"
    local perf srch nst
    perf=$(grep -h "^performance:" "$OUT/logs/$nm.md.log" 2>/dev/null | cut -c14-60)
    srch=$(grep -h "^search step:" "$OUT/logs/$nm.md.log" 2>/dev/null | cut -c14-400)
    nst=$(grep -ho "nstlist [0-9]* -> [0-9]*\|nstlist [0-9]*" "$OUT/logs/$nm.md.log" 2>/dev/null | head -1)
    say "    $nm: rc $rc, $(($(date +%s) - t0)) s; $nst; $perf; search $srch"
}
for cfg in 4:4x1x1 4:2x2x1 8:2x2x2 1:1x1x1; do
    np=${cfg%%:*} dd=${cfg#*:}
    for rep in 1 2; do
        abrun "ab_${dd}_base$rep" "$np" "$dd" "$bdir/build/halox" 20000
        abrun "ab_${dd}_new$rep" "$np" "$dd" "$HALOX" 20000
    done
done
# the interval of decomposed runs: this tree at fixed nstlist (the default chose 100 before)
for cfg in 4:4x1x1 4:2x2x1 8:2x2x2; do
    np=${cfg%%:*} dd=${cfg#*:}
    for n in 40 50 80; do
        abrun "nl_${dd}_$n" "$np" "$dd" "$HALOX" 20000 --nstlist $n
    done
done
# per kernel (direct launches, an event after each), 4x1x1
abrun "ab_4x1x1_basekt" 4 4x1x1 "$bdir/build/halox" 5000 -- HALOX_GPU_DD_KTIMES=1
abrun "ab_4x1x1_newkt" 4 4x1x1 "$HALOX" 5000 -- HALOX_GPU_DD_KTIMES=1
abrun "st_4x1x1_new" 4 4x1x1 "$HALOX" 5000 -- HALOX_GPU_SEARCH_TIMING=1
for f in "$OUT"/logs/ab_*kt.out; do
    say "  $(basename "$f"):"
    grep -A16 'by kernel' "$f" | grep '^\[rank 0\]' | cut -c1-100 | tee -a "$summary" > /dev/null
done
grep -h 'pair search by stage' "$OUT/logs/st_4x1x1_new.out" | head -1 | cut -c1-240 | sed 's/^/      /' | tee -a "$summary" > /dev/null

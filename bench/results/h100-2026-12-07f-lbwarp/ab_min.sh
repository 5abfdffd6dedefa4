# One-off (untracked; sourced by scripts/h200.sh --exec): the list build's passes without block
# barriers and the next pass's boxes loaded ahead, and the modules' set-up agreed with the pair
# search's statistics (this tree) against the same tree less base.patch (main at b54b30b),
# alternated, 45k, halox md --gpu defaults, every step counted; then the pair search by stage
# (HALOX_GPU_SEARCH_TIMING=1) of both at 4x1x1 (the call cut to 4x1x1 and one GPU).
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
for cfg in 4:4x1x1 1:1x1x1; do
    np=${cfg%%:*} dd=${cfg#*:}
    for rep in 1 2; do
        abrun "ab_${dd}_base$rep" "$np" "$dd" "$bdir/build/halox" 20000
        abrun "ab_${dd}_new$rep" "$np" "$dd" "$HALOX" 20000
    done
done
# the pair search by stage (direct launches, an event after each stage), both trees
for cfg in 4:4x1x1; do
    np=${cfg%%:*} dd=${cfg#*:}
    abrun "st_${dd}_base" "$np" "$dd" "$bdir/build/halox" 6000 -- HALOX_GPU_SEARCH_TIMING=1
    abrun "st_${dd}_new" "$np" "$dd" "$HALOX" 6000 -- HALOX_GPU_SEARCH_TIMING=1
done
for f in "$OUT"/logs/st_*.out; do
    say "  $(basename "$f"): $(grep -h 'pair search by stage' "$f" | head -1 | cut -c1-260)"
done

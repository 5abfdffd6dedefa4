# One-off (sourced by scripts/h200.sh --exec after the GPU suite): the search step launched
# directly with the step graph captured one step later, and the energy steps' pair kernel in
# the forces kernel's layout (k_nb_2he), against the same tree less base.patch (main at
# 0c23cb7), alternated; halox md --gpu defaults, every step counted; then GROMACS beside this
# tree (bench/compare_gpu.py) on one GPU and 4 ranks.
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
    if [[ $(left) -lt 150 ]]; then say "    $nm: skipped (the call's time is spent)"; return; fi
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
    abrun "ab_45k_base$rep" 1 1x1x1 "$bdir/build/halox" "$w45" 20000
    abrun "ab_45k_new$rep" 1 1x1x1 "$HALOX" "$w45" 20000
done
abrun "ab_45k_e10_base1" 1 1x1x1 "$bdir/build/halox" "$w45" 10000 --nstenergy 10
abrun "ab_45k_e10_new1" 1 1x1x1 "$HALOX" "$w45" 10000 --nstenergy 10
# every step an energy step: the step is the energy kernel's
abrun "ab_45k_e1_base1" 1 1x1x1 "$bdir/build/halox" "$w45" 3000 --nstenergy 1
abrun "ab_45k_e1_new1" 1 1x1x1 "$HALOX" "$w45" 3000 --nstenergy 1
abrun "ab_180k_base1" 1 1x1x1 "$bdir/build/halox" "$w180" 5000
abrun "ab_180k_new1" 1 1x1x1 "$HALOX" "$w180" 5000
abrun "ab_4x1x1_base1" 4 4x1x1 "$bdir/build/halox" "$w45" 20000
abrun "ab_4x1x1_new1" 4 4x1x1 "$HALOX" "$w45" 20000
rm -f "$w180"
# GROMACS beside this tree, same call
gt=$here/../../.tools/gmx-cuda-sm90.tar.xz
[[ -z ${HALOX_GMX_TARBALL:-} && ! -f $here/.tools/gmx-cuda-sm90.tar.xz && -f $gt ]] && export HALOX_GMX_TARBALL=$gt
cbudget=$(($(left) - 20))
if [[ $cbudget -gt 60 ]]; then
    export HALOX_BENCH_COMMAND="probe2.sh: bench/compare_gpu.py --configs 1gpu-45k,1gpu-180k,4r-4x1x1-45k --seconds 6"
    t0=$(date +%s)
    (cd "$here" && python3 bench/compare_gpu.py --halox "$HALOX" --out "$OUT/compare" --budget "$cbudget" \
        --seconds 6 --configs 1gpu-45k,1gpu-180k,4r-4x1x1-45k) > "$OUT/logs/compare.log" 2>&1
    say "  compare: rc $?, $(($(date +%s) - t0)) s"
    tail -6 "$OUT/logs/compare.log" | cut -c1-170 | sed 's/^/    /' | tee -a "$summary"
    unset HALOX_BENCH_COMMAND
else
    say "  compare: skipped (only $(left) s left)"
fi

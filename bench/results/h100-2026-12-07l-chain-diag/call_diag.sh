# One-off (sourced by scripts/h200.sh --exec): where the decomposed search step's chain goes at
# this tree, for the plan in docs/design/gpu-search.md ("What the 300 us needs"): the device
# step by kernel (HALOX_GPU_DD_KTIMES=1) and the pair search by stage (HALOX_GPU_SEARCH_TIMING=1,
# which runs it whole), 45k water, halox md --gpu defaults; one GPU's stages beside; 8 ranks
# 2x2x2 with the defaults (issue 27's >= 900 ns/day).
source "$here/scripts/h200_ab.sh"
abrun "diag_4x1x1_kt" 4 4x1x1 "$HALOX" 10000 -- HALOX_GPU_DD_KTIMES=1
abrun "diag_4x1x1_st" 4 4x1x1 "$HALOX" 10000 -- HALOX_GPU_SEARCH_TIMING=1
abrun "diag_1x1x1_st" 1 1x1x1 "$HALOX" 10000 -- HALOX_GPU_SEARCH_TIMING=1
abrun "diag_2x2x2_def" 8 2x2x2 "$HALOX" 12000
for f in "$OUT"/logs/diag_*_kt.out; do
    say "  $(basename "$f"):"
    grep -h "by kernel\|^\[rank 0\]   k_\|^\[rank 0\]   message" "$f" | sed 's/^/    /' | tee -a "$summary" > /dev/null
    grep -h "by kernel\|^\[rank 0\]   k_\|^\[rank 0\]   message" "$f" | sed 's/^/    /'
done
ab_stages "$OUT/logs/diag_*_st.out"

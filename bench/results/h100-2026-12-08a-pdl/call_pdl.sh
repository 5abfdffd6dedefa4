# One-off (sourced by scripts/h200.sh --exec): programmatic dependent launch of the device search
# step's kernels (HALOX_GPU_DD_PDL) and of the pair search's (HALOX_GPU_SEARCH_PDL), both on by
# default in this tree, against both off, same build, alternated; 45k water, `halox md --gpu`
# defaults, every step counted (docs/design/gpu-search.md, "Programmatic launch of the search
# step's kernels": the prediction, written before this run).
source "$here/scripts/h200_ab.sh"
off=(HALOX_GPU_DD_PDL=0 HALOX_GPU_SEARCH_PDL=0)
for rep in 1 2; do
    abrun "ab_4x1x1_pdl$rep" 4 4x1x1 "$HALOX" 20000
    abrun "ab_4x1x1_off$rep" 4 4x1x1 "$HALOX" 20000 -- "${off[@]}"
done
abrun "ab_2x2x1_pdl1" 4 2x2x1 "$HALOX" 20000
abrun "ab_2x2x1_off1" 4 2x2x1 "$HALOX" 20000 -- "${off[@]}"
abrun "ab_1x1x1_pdl1" 1 1x1x1 "$HALOX" 20000
abrun "ab_1x1x1_off1" 1 1x1x1 "$HALOX" 20000 -- "${off[@]}"
abrun "ab_4x1x1_pdl3" 4 4x1x1 "$HALOX" 20000
abrun "ab_4x1x1_off3" 4 4x1x1 "$HALOX" 20000 -- "${off[@]}"

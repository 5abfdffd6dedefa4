# One-off: two more alternated pairs at 2x2x2 (8 ranks), the home-zone pair search on/off.
source "$here/scripts/h200_ab.sh"
for rep in 2 3; do
    abrun "ab_2x2x2_off$rep" 8 2x2x2 "$HALOX" 12000 -- HALOX_GPU_SEARCH_HOME=0
    abrun "ab_2x2x2_on$rep" 8 2x2x2 "$HALOX" 12000
done

# One-off (sourced by scripts/h200.sh --exec): the home zone's pair search launched right after
# the device step (HALOX_GPU_SEARCH_HOME=1, the default) against the whole search after the
# coordinate halo (HALOX_GPU_SEARCH_HOME=0, the code before), same build, alternated; 45k water,
# halox md --gpu defaults, every step counted.
source "$here/scripts/h200_ab.sh"
for rep in 1 2 3; do
    abrun "ab_4x1x1_off$rep" 4 4x1x1 "$HALOX" 20000 -- HALOX_GPU_SEARCH_HOME=0
    abrun "ab_4x1x1_on$rep" 4 4x1x1 "$HALOX" 20000
done
for rep in 1 2; do
    abrun "ab_2x2x1_off$rep" 4 2x2x1 "$HALOX" 20000 -- HALOX_GPU_SEARCH_HOME=0
    abrun "ab_2x2x1_on$rep" 4 2x2x1 "$HALOX" 20000
done
abrun "ab_2x2x2_off1" 8 2x2x2 "$HALOX" 12000 -- HALOX_GPU_SEARCH_HOME=0
abrun "ab_2x2x2_on1" 8 2x2x2 "$HALOX" 12000
abrun "ab_1x1x1_on1" 1 1x1x1 "$HALOX" 20000

# One-off (sourced by scripts/h200.sh --exec): two shared-GPU experiments against the default,
# same build, alternated; 45k water, halox md --gpu defaults, every step counted.
#  - HALOX_GPU_LB_HOME_BLOCKS=2 / 3: the home part's list build with fewer resident blocks per
#    SM. Predicted at 4x1x1: the search step -10 to -30 us if the home parts' slots were what
#    delayed the other processes' device steps; unchanged (within ~40 us) if it was throughput.
#    Refuted if hb2 and hb3 are not both below the default in every 4x1x1 pair.
#  - HALOX_GPU_DD_PRIORITY=high: the device search step on the highest-priority stream.
#    Predicted -10 to -40 us at 4x1x1 if the hardware's priorities order different MPS
#    clients' work; no change otherwise. Refuted if not below the default in both pairs.
source "$here/scripts/h200_ab.sh"
for rep in 1 2; do
    abrun "ab_4x1x1_def$rep" 4 4x1x1 "$HALOX" 20000
    abrun "ab_4x1x1_hb2_$rep" 4 4x1x1 "$HALOX" 20000 -- HALOX_GPU_LB_HOME_BLOCKS=2
    abrun "ab_4x1x1_high$rep" 4 4x1x1 "$HALOX" 20000 -- HALOX_GPU_DD_PRIORITY=high
    abrun "ab_4x1x1_hb3_$rep" 4 4x1x1 "$HALOX" 20000 -- HALOX_GPU_LB_HOME_BLOCKS=3
done
abrun "ab_2x2x1_def1" 4 2x2x1 "$HALOX" 20000
abrun "ab_2x2x1_hb2_1" 4 2x2x1 "$HALOX" 20000 -- HALOX_GPU_LB_HOME_BLOCKS=2
abrun "ab_2x2x1_high1" 4 2x2x1 "$HALOX" 20000 -- HALOX_GPU_DD_PRIORITY=high

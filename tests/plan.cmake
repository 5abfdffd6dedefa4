# Domain decomposition and the halo plan (issue: plan core).
halox_test(test_plan_invariants SOURCES test_plan_invariants.c LABELS plan)
halox_test(test_plan_errors SOURCES test_plan_errors.c LABELS plan)

# Domain decomposition and the halo plan (issue: plan core).
halox_test(test_plan_invariants SOURCES test_plan_invariants.c plan_fixture.c LABELS plan)
halox_test(test_plan_errors SOURCES test_plan_errors.c LABELS plan)
add_library(halox_plan_fixture STATIC plan_fixture.c)
target_link_libraries(halox_plan_fixture PUBLIC halox_testutil)
halox_mpi_test(test_plan_mpi SOURCES test_plan_mpi.c RANKS 1 2 3 4 8 LABELS plan)
if(TARGET test_plan_mpi)
  target_link_libraries(test_plan_mpi PRIVATE halox_plan_fixture)
endif()

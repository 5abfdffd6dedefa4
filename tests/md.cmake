# MD engine tests (src/md): energies vs an O(N^2) reference, SETTLE, NVE drift, determinism,
# missed-pair counter, `halox md` command line.
halox_test(test_md_energy SOURCES test_md_energy.c test_md_common.c LABELS md)
# "long": physics runs of tens of seconds to minutes; `scripts/test.sh --quick` skips them
# (ctest -LE long), CI runs them.
halox_test(test_md_nve SOURCES test_md_nve.c test_md_common.c LABELS md long)
# the buffer model against the pairs it predicts a list misses (CPU engine, ~20 s)
halox_test(test_md_buffer SOURCES test_md_buffer.c test_md_common.c LABELS md long)
halox_test(test_md_determinism SOURCES test_md_determinism.c test_md_common.c LABELS md long)
halox_test(test_md_cli SOURCES test_md_cli.c test_md_common.c LABELS md ARGS $<TARGET_FILE:halox_app>)
halox_test(test_md_metrics SOURCES test_md_metrics.c test_md_common.c LABELS md)
# `halox md` options as GROMACS users give them: -f run.mdp, --continuation, 64-bit steps,
# start-from-rest warning, named input in box errors, help defaults, log header and summary.
add_test(NAME test_md_options COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_md_options.sh $<TARGET_FILE:halox_app>)
set_tests_properties(test_md_options PROPERTIES LABELS "cpu;md;cli" TIMEOUT 300)
# the conserved energy with v-rescale and a built mixture's start, through the command line
add_test(NAME test_md_physics COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_md_physics.sh $<TARGET_FILE:halox_app>)
set_tests_properties(test_md_physics PROPERTIES LABELS "cpu;md;cli;long" TIMEOUT 900)
# the automatic pair-list interval and rolling prune against the documented rule (seconds)
halox_test(test_md_list_setup SOURCES test_md_list_setup.c test_md_common.c test_ethanol_common.c
           LABELS md)
# who decides halox md's pair-list interval, and where the choice is written: the CPU engine
# keeps 10 here; the GPU half (a device needed, else skipped) runs with the GPU tests
add_test(NAME test_md_nstlist_cli
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_md_nstlist_cli.sh $<TARGET_FILE:halox_app> cpu)
set_tests_properties(test_md_nstlist_cli PROPERTIES LABELS "cpu;md;cli" TIMEOUT 300)
if(HALOX_HAVE_CUDA)
  add_test(NAME test_gpu_md_nstlist_cli
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_md_nstlist_cli.sh $<TARGET_FILE:halox_app> gpu)
  set_tests_properties(test_gpu_md_nstlist_cli PROPERTIES LABELS "gpu;md;cli" TIMEOUT 600
                       SKIP_RETURN_CODE 77)
endif()

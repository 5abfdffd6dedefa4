# The domain-decomposed MD engine: in-process decompositions and MPI ranks.
halox_test(test_dd_md SOURCES test_dd_md.c LABELS dd long)
halox_mpi_test(test_dd_md_mpi SOURCES test_dd_md.c RANKS 1 2 3 4 8 LABELS dd)
if(TARGET test_dd_md_mpi)
  target_compile_definitions(test_dd_md_mpi PRIVATE HX_TEST_MPI=1)
  # 3 to 8 ranks on CI's 2 cores take 20-60 s each: "long" (skipped by test.sh --quick)
  foreach(n 3 4 8)
    set_property(TEST test_dd_md_mpi_np${n} APPEND PROPERTY LABELS long)
  endforeach()
endif()
if(HALOX_HAVE_MPI)
  add_test(NAME test_dd_cli
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_dd_cli.sh $<TARGET_FILE:halox_app>
                   ${MPIEXEC_EXECUTABLE} ${HALOX_MPIEXEC_FLAGS})
  set_tests_properties(test_dd_cli PROPERTIES LABELS "mpi;dd;cli" TIMEOUT 900 RUN_SERIAL TRUE)
endif()
if(HALOX_SANITIZE AND TEST test_dd_cli)
  set_tests_properties(test_dd_cli PROPERTIES ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1")
endif()
# a local failure between agreement points ends the run on every rank, without a hang
halox_mpi_test(test_md_fault SOURCES test_md_fault.c test_md_common.c RANKS 2 3 LABELS dd)
if(TARGET test_md_fault)
  # seconds normally; a hang (the failure it guards against) should not cost ten minutes
  set_tests_properties(test_md_fault_np2 test_md_fault_np3 PROPERTIES TIMEOUT 120)
endif()

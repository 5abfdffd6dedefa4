# Ethanol in water (issue 15, CPU): the OPLS-AA force field as halox builds it, bonded terms and
# constraints against independent references (tests/test_ethanol_common.c), input rules,
# single-point energies per term, NVE conservation at 2 fs with SHAKE, decompositions (in one
# process and over MPI ranks) against one domain, and GROMACS on the topology halox writes.
halox_test(test_ethanol_ff SOURCES test_ethanol_ff.c test_ethanol_common.c LABELS md ethanol)
halox_test(test_ethanol_bonded SOURCES test_ethanol_bonded.c test_ethanol_common.c
           LABELS md ethanol)
halox_test(test_ethanol_energy SOURCES test_ethanol_energy.c test_ethanol_common.c
           LABELS md ethanol)
# built mixtures and MD: minutes on the 2-core machine ("long": scripts/test.sh --quick skips)
halox_test(test_ethanol_nve SOURCES test_ethanol_nve.c test_ethanol_common.c
           LABELS md ethanol long)
halox_test(test_ethanol_dd SOURCES test_ethanol_dd.c LABELS dd ethanol long)
halox_mpi_test(test_ethanol_dd_mpi SOURCES test_ethanol_dd.c RANKS 2 3 4 8 LABELS dd ethanol)
if(TARGET test_ethanol_dd_mpi)
  target_compile_definitions(test_ethanol_dd_mpi PRIVATE HX_TEST_MPI=1)
  set_property(TEST test_ethanol_dd_mpi_np3 test_ethanol_dd_mpi_np4 test_ethanol_dd_mpi_np8
               APPEND PROPERTY LABELS long)
endif()
add_test(NAME gromacs_ethanol
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/gromacs_ethanol.sh $<TARGET_FILE:halox_app>
                 ${CMAKE_CURRENT_BINARY_DIR}/gromacs_ethanol)
set_tests_properties(gromacs_ethanol PROPERTIES LABELS "gromacs;ethanol;long"
                     SKIP_RETURN_CODE 77 TIMEOUT 900 PROCESSORS 1)

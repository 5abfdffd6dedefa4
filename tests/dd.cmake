# The domain-decomposed MD engine: in-process decompositions and MPI ranks.
halox_test(test_dd_md SOURCES test_dd_md.c LABELS dd)
halox_mpi_test(test_dd_md_mpi SOURCES test_dd_md.c RANKS 1 2 3 4 8 LABELS dd)
if(TARGET test_dd_md_mpi)
  target_compile_definitions(test_dd_md_mpi PRIVATE HX_TEST_MPI=1)
endif()

# Communicators (src/comm): one rank failing before or inside a collective makes every rank
# return an error. A hang is the failure mode, so the timeout is short (the test takes seconds).
halox_mpi_test(test_comm_fail SOURCES test_comm_fail.c RANKS 1 2 3 4 LABELS comm)
foreach(n 1 2 3 4)
  if(TEST test_comm_fail_np${n})
    set_tests_properties(test_comm_fail_np${n} PROPERTIES TIMEOUT 120)
  endif()
endforeach()

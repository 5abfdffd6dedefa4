# Communicators (src/comm): one rank failing before or inside a collective makes every rank
# return an error. A hang is the failure mode, so the timeout is short (the test takes seconds).
halox_mpi_test(test_comm_fail SOURCES test_comm_fail.c RANKS 1 2 3 4 LABELS comm)
foreach(n 1 2 3 4)
  if(TEST test_comm_fail_np${n})
    set_tests_properties(test_comm_fail_np${n} PROPERTIES TIMEOUT 120)
  endif()
endforeach()
# hx_comm_max_f64: exact maxima and minima of doubles over domains (signed zeros, infinities,
# subnormals, a NaN that must show as +infinity), MPI and serial communicators
if(HALOX_HAVE_MPI)
  halox_mpi_test(test_comm_max SOURCES test_comm_max.c RANKS 1 3 4 LABELS comm)
else()
  halox_test(test_comm_max SOURCES test_comm_max.c LABELS comm)
endif()
# No rank left waiting (docs/robustness.md, "Hangs"): a rank that stops, skips an exchange or an
# agreement, fails in an engine hook or output, or hangs; every rank returns within the deadline
# (2 s in the test) with a message. The watchdog inside turns a hang into a named failure.
halox_mpi_test(test_waits SOURCES test_waits.c test_md_common.c RANKS 2 3 LABELS comm robust)
if(TARGET test_waits)
  target_link_libraries(test_waits PRIVATE halox_plan_fixture)
  set_tests_properties(test_waits_np2 test_waits_np3 PROPERTIES TIMEOUT 300)
endif()

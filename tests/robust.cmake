# Robustness: checkpoints and restarts, bad input, faults.
set(_ckpt_mpi "")
if(HALOX_HAVE_MPI)
  set(_ckpt_mpi ${MPIEXEC_EXECUTABLE} ${HALOX_MPIEXEC_FLAGS})
endif()
add_test(NAME test_checkpoint
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_checkpoint.sh $<TARGET_FILE:halox_app> ${_ckpt_mpi})
set_tests_properties(test_checkpoint PROPERTIES LABELS "cpu;robust;cli" TIMEOUT 600)

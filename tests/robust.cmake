# Robustness: checkpoints and restarts, bad input, faults.
set(_ckpt_mpi "")
if(HALOX_HAVE_MPI)
  set(_ckpt_mpi ${MPIEXEC_EXECUTABLE} ${HALOX_MPIEXEC_FLAGS})
endif()
add_test(NAME test_checkpoint
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_checkpoint.sh $<TARGET_FILE:halox_app> ${_ckpt_mpi})
set_tests_properties(test_checkpoint PROPERTIES LABELS "cpu;robust;cli" TIMEOUT 600)
halox_test(test_ckpt_corpus SOURCES test_ckpt_corpus.c LABELS robust
           ARGS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus_checkpoint)

# libFuzzer harness of the checkpoint reader (tests/fuzz/README.md).
halox_fuzzer(fuzz_checkpoint fuzz/fuzz_checkpoint.c ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus_checkpoint
             SOURCES src/io/checkpoint.c src/io/files.c LABELS robust)
add_test(NAME test_bad_input
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_bad_input.sh $<TARGET_FILE:halox_app>
                 ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus_gro)
set_tests_properties(test_bad_input PROPERTIES LABELS "cpu;robust;cli" TIMEOUT 600)
if(HALOX_SANITIZE AND TEST test_checkpoint)
  set_tests_properties(test_checkpoint PROPERTIES ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1")
endif()
# Output files: devices and FIFOs written through, paths checked and outputs locked before the
# run, -o = -c keeps the input.
add_test(NAME test_outputs COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_outputs.sh $<TARGET_FILE:halox_app>)
set_tests_properties(test_outputs PROPERTIES LABELS "cpu;robust;cli" TIMEOUT 300)
# Graceful stop on SIGINT/SIGTERM, one process and under MPI; a second signal ends at once.
add_test(NAME test_signal
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_signal.sh $<TARGET_FILE:halox_app>
                 ${PROJECT_SOURCE_DIR} ${_ckpt_mpi})
set_tests_properties(test_signal PROPERTIES LABELS "cpu;robust;cli" TIMEOUT 600 PROCESSORS 2)
if(HALOX_SANITIZE)
  set_tests_properties(test_signal PROPERTIES ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1")
endif()
# scripts/test.sh --quick skips the tests labelled "long".
add_test(NAME test_quick COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_quick.sh ${PROJECT_BINARY_DIR}
                                 ${PROJECT_SOURCE_DIR})
set_tests_properties(test_quick PROPERTIES LABELS "cpu;robust" TIMEOUT 60)

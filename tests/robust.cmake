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

# libFuzzer harness for the checkpoint reader (see tests/fuzz/README.md).
if(HALOX_FUZZ)
  add_executable(fuzz_checkpoint fuzz/fuzz_checkpoint.c ${PROJECT_SOURCE_DIR}/src/io/checkpoint.c
                 ${PROJECT_SOURCE_DIR}/src/core/error.c ${PROJECT_SOURCE_DIR}/src/core/log.c
                 ${PROJECT_SOURCE_DIR}/src/core/system.c)
  target_include_directories(fuzz_checkpoint PRIVATE ${PROJECT_SOURCE_DIR}/include
                             ${PROJECT_BINARY_DIR}/include ${PROJECT_SOURCE_DIR}/src)
  target_compile_definitions(fuzz_checkpoint PRIVATE _XOPEN_SOURCE=700)
  target_compile_options(fuzz_checkpoint PRIVATE -g -O1 -fsanitize=fuzzer,address,undefined
                         -fno-sanitize-recover=all ${HALOX_WARNINGS})
  target_link_options(fuzz_checkpoint PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(fuzz_checkpoint PRIVATE m)
  file(GLOB HALOX_CKPT_CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus_checkpoint/*)
  add_test(NAME fuzz_checkpoint_corpus COMMAND fuzz_checkpoint ${HALOX_CKPT_CORPUS})
  set_tests_properties(fuzz_checkpoint_corpus PROPERTIES LABELS "fuzz;robust")
endif()
add_test(NAME test_bad_input
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_bad_input.sh $<TARGET_FILE:halox_app>
                 ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus_gro)
set_tests_properties(test_bad_input PROPERTIES LABELS "cpu;robust;cli" TIMEOUT 600)
if(HALOX_SANITIZE AND TEST test_checkpoint)
  set_tests_properties(test_checkpoint PROPERTIES ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1")
endif()

# .gro I/O, system builders, `halox build`, and the .gro fuzzing harness.

halox_test(test_gro SOURCES test_gro.c LABELS io)
# argv: the halox program (a short MD run of a tiled box) and the shipped equilibrated boxes
halox_test(test_builder SOURCES test_builder.c LABELS io
           ARGS $<TARGET_FILE:halox_app> ${PROJECT_SOURCE_DIR}/data)
add_dependencies(test_builder halox_app)
# Replays tests/fuzz/corpus_gro through the reader in every build, so CI runs the corpus.
halox_test(test_gro_corpus SOURCES test_gro_corpus.c LABELS io
           ARGS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus_gro)
halox_test(test_build_cli SOURCES test_build_cli.c LABELS io ARGS $<TARGET_FILE:halox_app>)
add_dependencies(test_build_cli halox_app)

# GROMACS must accept our multi-frame output: `gmx check` on a trajectory test_gro_traj writes.
find_program(HALOX_GMX NAMES gmx gmx_mpi)
if(HALOX_GMX)
  halox_test(test_gro_gmx SOURCES test_gro_gmx.c LABELS io ARGS ${HALOX_GMX})
endif()

# libFuzzer harness: cmake -DHALOX_FUZZ=ON -DCMAKE_C_COMPILER=clang. The reader's sources are
# compiled into the harness itself so that they carry the coverage instrumentation of
# -fsanitize=fuzzer (the halox library target is built without it).
if(HALOX_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "HALOX_FUZZ=ON needs clang (libFuzzer): -DCMAKE_C_COMPILER=clang")
  endif()
  add_executable(fuzz_gro fuzz/fuzz_gro.c ${PROJECT_SOURCE_DIR}/src/io/gro.c
                 ${PROJECT_SOURCE_DIR}/src/core/error.c ${PROJECT_SOURCE_DIR}/src/core/log.c
                 ${PROJECT_SOURCE_DIR}/src/core/system.c)
  target_include_directories(fuzz_gro PRIVATE ${PROJECT_SOURCE_DIR}/include
                             ${PROJECT_BINARY_DIR}/include ${PROJECT_SOURCE_DIR}/src)
  target_compile_definitions(fuzz_gro PRIVATE _XOPEN_SOURCE=700)
  target_compile_options(fuzz_gro PRIVATE -g -O1 -fsanitize=fuzzer,address,undefined
                         -fno-sanitize-recover=all ${HALOX_WARNINGS})
  target_link_options(fuzz_gro PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(fuzz_gro PRIVATE m)
  # Short smoke run in CTest: replay the seed corpus, then 20000 mutated inputs.
  file(GLOB HALOX_GRO_CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus_gro/*)
  add_test(NAME fuzz_gro_corpus COMMAND fuzz_gro ${HALOX_GRO_CORPUS})
  set_tests_properties(fuzz_gro_corpus PROPERTIES LABELS "fuzz;io")
endif()

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

# libFuzzer harness of the .gro reader (tests/fuzz/README.md).
halox_fuzzer(fuzz_gro fuzz/fuzz_gro.c ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus_gro
             SOURCES src/io/gro.c src/io/files.c LABELS io)

# scripts/plot.py on a halox md energy file and on the committed benchmark result.
add_test(NAME test_plot COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_plot.sh $<TARGET_FILE:halox_app>
                                ${PROJECT_SOURCE_DIR})
set_tests_properties(test_plot PROPERTIES LABELS "cpu;io;cli" TIMEOUT 300 SKIP_RETURN_CODE 77)
# scripts/nvshmem_trace.py (the NVSHMEM exchange's per-PE traces lined up) on synthetic traces
# with known intervals, and its bad-input messages
add_test(NAME test_nvshmem_trace COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_nvshmem_trace.sh
                                         ${PROJECT_SOURCE_DIR})
set_tests_properties(test_nvshmem_trace PROPERTIES LABELS "cpu;io" TIMEOUT 120)
# scripts/search_trace.py (the search step's per-process timelines lined up) on synthetic
# traces with known times, and its bad-input messages (the traced run: test_gpu_search_trace)
add_test(NAME test_search_trace COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_search_trace.sh
                                        ${PROJECT_SOURCE_DIR})
set_tests_properties(test_search_trace PROPERTIES LABELS "cpu;io" TIMEOUT 120)
add_test(NAME test_bench_report
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_bench_report.sh $<TARGET_FILE:halox_app>)
set_tests_properties(test_bench_report PROPERTIES LABELS "cpu;io;cli" TIMEOUT 300)
# halox bench --suite paper --quick: run files, skip reasons, the box cache, resume, SIGINT
add_test(NAME test_bench_suite
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_bench_suite.sh $<TARGET_FILE:halox_app>)
# (it starts mpirun: Open MPI's allocations at exit are not leak-checked, as for the MPI tests)
set_tests_properties(test_bench_suite PROPERTIES LABELS "cpu;io;cli;mpi" TIMEOUT 600
                     ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1")
# GROMACS on the GPU beside halox (bench/gmx_gpu.py, bench/compare_gpu.py), without a GPU: the
# md.log parsers on logs of real runs (tests/fixtures), the GPU task mapping, finding GROMACS
add_test(NAME test_gmx_gpu COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_gmx_gpu.py ${PROJECT_SOURCE_DIR})
set_tests_properties(test_gmx_gpu PROPERTIES LABELS "cpu;io" TIMEOUT 120)
# scripts/h200_compare.sh through the stand-ins of tests/fake: the commands (dry run), the budget,
# no GROMACS, a real run of both codes on the CPU, and sourced by scripts/h200.sh
add_test(NAME test_gpu_compare COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_gpu_compare.sh
                                       $<TARGET_FILE:halox_app> ${PROJECT_SOURCE_DIR})
set_tests_properties(test_gpu_compare PROPERTIES LABELS "cpu;io;cli" TIMEOUT 300
                     ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1")

# GROMACS topologies of halox systems (hx_topology_write, `halox build --top`), without GROMACS;
# tests/gromacs_topology.sh runs them in GROMACS.
halox_test(test_topology SOURCES test_topology.c LABELS io)

# GROMACS .mdp files: the supported keys and values, and every refusal with file:line.
halox_test(test_mdp SOURCES test_mdp.c LABELS io)

# JSON output (src/io/json.c): exact numbers, null for non-finite values, escaped UTF-8 strings.
halox_test(test_json SOURCES test_json.c LABELS io)
target_include_directories(test_json PRIVATE ${HALOX_CJSON_INCLUDE})
target_link_libraries(test_json PRIVATE ${HALOX_CJSON_LIB})

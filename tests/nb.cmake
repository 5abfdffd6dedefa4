# Non-bonded tests (src/md/nonbonded.c, nb_*.c): mixed precision against double, local/non-local
# split against the full computation. The benchmark bench/nb_bench.c is built here as a plain
# executable (not a test).
add_executable(nb_bench ${PROJECT_SOURCE_DIR}/bench/nb_bench.c)
target_link_libraries(nb_bench PRIVATE halox)
target_compile_options(nb_bench PRIVATE ${HALOX_WARNINGS})
target_compile_definitions(nb_bench PRIVATE _XOPEN_SOURCE=700)
halox_test(test_nb_split SOURCES test_nb_split.c test_md_common.c LABELS md nb)
halox_test(test_nb_mixed SOURCES test_nb_mixed.c test_md_common.c LABELS md nb)
# The same programs with the portable (SSE2) kernels forced, on machines that would pick AVX2.
add_test(NAME test_nb_split_sse2 COMMAND test_nb_split)
add_test(NAME test_nb_mixed_sse2 COMMAND test_nb_mixed)
set_tests_properties(test_nb_split_sse2 test_nb_mixed_sse2 PROPERTIES
                     ENVIRONMENT HALOX_NB_SIMD=sse2 LABELS "cpu;md;nb" TIMEOUT 600)

# Non-bonded kernel tests (src/md/nonbonded.c): mixed precision against double, local/non-local
# split against the full computation. The benchmark bench/nb_bench.c is built here as a plain
# executable (not a test).
add_executable(nb_bench ${PROJECT_SOURCE_DIR}/bench/nb_bench.c)
target_link_libraries(nb_bench PRIVATE halox)
target_compile_options(nb_bench PRIVATE ${HALOX_WARNINGS})
target_compile_definitions(nb_bench PRIVATE _XOPEN_SOURCE=700)

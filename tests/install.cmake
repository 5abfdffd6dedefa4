# The installed package works for other projects: find_package(halox) + the example program.
add_test(NAME install_example
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/install_example.sh ${PROJECT_BINARY_DIR} ${PROJECT_SOURCE_DIR})
set_tests_properties(install_example PROPERTIES LABELS "cpu;install" TIMEOUT 300)

# The layering of the sources (docs/ARCHITECTURE.md, scripts/check_layers.py): no include cycle
# between source folders, the documented order, app/ and examples/ on the public API only. The
# second test injects an include of the engine's private header into md (md -> mdrun, while
# mdrun includes md) and passes only if the check reports the cycle.
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  add_test(NAME check_layers
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/check_layers.py
                   --root ${PROJECT_SOURCE_DIR})
  add_test(NAME check_layers_injected_cycle
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/check_layers.py
                   --root ${PROJECT_SOURCE_DIR} --inject src/md/nonbonded.c:mdrun/md_impl.h)
  set_tests_properties(check_layers_injected_cycle PROPERTIES
                       PASS_REGULAR_EXPRESSION "include cycle between folders [a-z ->]*md -> mdrun")
  set_tests_properties(check_layers check_layers_injected_cycle PROPERTIES LABELS "cpu;layers")
endif()

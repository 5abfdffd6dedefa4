# Comparisons with GROMACS (label "gromacs"). Both tests need `gmx` on PATH at test time and
# report SKIPPED (exit 77) with the reason when it is not there, so a minimal CI machine without
# GROMACS still runs the suite green. Scripts: tests/gromacs_*.sh (gromacs_lib.sh: what they
# share), bench/gromacs/.
#
#   gromacs_reference  the GROMACS tooling (topology, mdp, which energy terms) against an
#                      independent Python evaluation of the formulas; needs no halox.
#   gromacs_energy     halox md --steps 0 against GROMACS single-point energies on boxes built by
#                      halox build (SPC/E, SPC, TIP3P; eps_rf 0 and 78.5).
#   gromacs_nve        20-30 step NVE trajectories of halox and gmx_d, energies step by step.
#   gromacs_topology   the topology `halox build --top` writes, with one .mdp for `halox md -f`
#                      and gmx grompp: gmx_d single points equal halox's term by term (water
#                      models, reaction field 0 and 78.5, argon).

add_test(NAME gromacs_reference
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/gromacs_reference.sh ${PROJECT_SOURCE_DIR}
                 ${CMAKE_CURRENT_BINARY_DIR}/gromacs_reference)
add_test(NAME gromacs_energy
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/gromacs_energy.sh $<TARGET_FILE:halox_app>
                 ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/gromacs_energy)
add_test(NAME gromacs_nve
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/gromacs_nve.sh $<TARGET_FILE:halox_app>
                 ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/gromacs_nve)
add_test(NAME gromacs_topology
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/gromacs_topology.sh $<TARGET_FILE:halox_app>
                 ${CMAKE_CURRENT_BINARY_DIR}/gromacs_topology)
# PROCESSORS 1: GROMACS runs one thread; halox one, except one gromacs_nve case with two.
set_tests_properties(gromacs_reference gromacs_energy gromacs_nve gromacs_topology PROPERTIES
                     LABELS gromacs SKIP_RETURN_CODE 77 TIMEOUT 300 PROCESSORS 1)
# trajectories step by step: "long" (scripts/test.sh --quick skips it)
set_property(TEST gromacs_nve APPEND PROPERTY LABELS long)

# MD engine tests (src/md): energies vs an O(N^2) reference, SETTLE, NVE drift, determinism,
# missed-pair counter, `halox md` command line.
halox_test(test_md_energy SOURCES test_md_energy.c test_md_common.c LABELS md)
halox_test(test_md_nve SOURCES test_md_nve.c test_md_common.c LABELS md)
halox_test(test_md_determinism SOURCES test_md_determinism.c test_md_common.c LABELS md)
halox_test(test_md_cli SOURCES test_md_cli.c test_md_common.c LABELS md ARGS $<TARGET_FILE:halox_app>)
halox_test(test_md_metrics SOURCES test_md_metrics.c test_md_common.c LABELS md)

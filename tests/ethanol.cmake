# Ethanol in water (issue 15, CPU): the OPLS-AA force field as halox builds it, bonded terms and
# constraints against independent references (tests/test_ethanol_common.c), input rules.
halox_test(test_ethanol_ff SOURCES test_ethanol_ff.c test_ethanol_common.c LABELS md ethanol)
halox_test(test_ethanol_bonded SOURCES test_ethanol_bonded.c test_ethanol_common.c
           LABELS md ethanol)

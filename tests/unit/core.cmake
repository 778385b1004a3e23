ty_unit_test(test_core SOURCES ${TY_TESTS_DIR}/unit/test_core.c LIBS ty_core)

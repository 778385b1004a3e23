# test_tuning: the tuning strategies (tuning_strategy.h) - range parsing and scaling, the grid,
# determinism with a seed, Bayesian against Random on toy objectives, the median stopping rule.
ty_unit_test(test_tuning SOURCES ${TY_TESTS_DIR}/unit/test_tuning.c LIBS ty_tuning)

# test_tuning: the tuning strategies (tuning_strategy.h) - range parsing and scaling, the grid,
# determinism with a seed, Bayesian against Random on toy objectives, the median stopping rule.
ty_unit_test(test_tuning SOURCES ${TY_TESTS_DIR}/unit/test_tuning.c LIBS ty_tuning)

# test_store_metrics: CloudWatch series in a private redis-server (store_metrics.h): ids,
# put/range, the cap, the retention, ListMetrics filters, the memory per point (printed).
ty_unit_test(test_store_metrics SOURCES ${TY_TESTS_DIR}/unit/test_store_metrics.c
             ${TY_TESTS_DIR}/unit/redis_fixture.c LIBS ty_store PkgConfig::HIREDIS)
target_include_directories(test_store_metrics PRIVATE ${TY_TESTS_DIR}/unit)
set_tests_properties(test_store_metrics PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 60)

# test_instmetrics: CPUUtilization/MemoryUtilization/DiskUtilization arithmetic (agent/instmetrics.h).
ty_unit_test(test_instmetrics SOURCES ${TY_TESTS_DIR}/unit/test_instmetrics.c LIBS ty_agent_core)
target_include_directories(test_instmetrics PRIVATE ${CMAKE_SOURCE_DIR}/control-plane/agent)

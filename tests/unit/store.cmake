# Unit tests of ty_store: each starts its own redis-server (exit 77 = skipped when absent).
ty_unit_test(test_store SOURCES ${TY_TESTS_DIR}/unit/test_store.c ${TY_TESTS_DIR}/unit/redis_fixture.c
             LIBS ty_store)
ty_unit_test(test_queue SOURCES ${TY_TESTS_DIR}/unit/test_queue.c ${TY_TESTS_DIR}/unit/redis_fixture.c
             LIBS ty_store)
set_tests_properties(test_store test_queue PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
# The object store's records (store_obj.h), each encoding checked against what Redis holds.
ty_unit_test(test_store_obj SOURCES ${TY_TESTS_DIR}/unit/test_store_obj.c
             ${TY_TESTS_DIR}/unit/redis_fixture.c LIBS ty_store)
set_tests_properties(test_store_obj PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 60)

# test_studio: the Studio operations' pure helpers (ids, ARNs, landing URIs, paging), the
# console's parsers and HTML escaping, and store_res against a private redis-server (that part
# is skipped when redis-server is not installed).
ty_unit_test(test_studio SOURCES ${TY_TESTS_DIR}/unit/test_studio.c
             ${TY_TESTS_DIR}/unit/redis_fixture.c LIBS ty_server PkgConfig::HIREDIS)
target_include_directories(test_studio PRIVATE ${TY_TESTS_DIR}/unit)
set_tests_properties(test_studio PROPERTIES TIMEOUT 120)

# test_console: the console's KDF, password policy, CSRF check, cookie attributes and parsing,
# form mapping, and login profiles with the lock-out against a private redis-server.
ty_unit_test(test_console SOURCES ${TY_TESTS_DIR}/unit/test_console.c
             ${TY_TESTS_DIR}/unit/redis_fixture.c LIBS ty_server PkgConfig::HIREDIS)
target_include_directories(test_console PRIVATE ${TY_TESTS_DIR}/unit)
set_tests_properties(test_console PROPERTIES TIMEOUT 120)

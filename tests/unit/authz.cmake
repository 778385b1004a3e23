# test_authz: authz.c's operation table (every operation of route.c and api/ has a row), the
# resource ARNs, the IAM query form decoder, and - against a private redis-server, skipped when
# it is not installed - decisions, the policy cache, store_iam.c and the quotas.
ty_unit_test(test_authz SOURCES ${TY_TESTS_DIR}/unit/test_authz.c
             ${TY_TESTS_DIR}/unit/redis_fixture.c LIBS ty_server PkgConfig::HIREDIS)
target_include_directories(test_authz PRIVATE ${TY_TESTS_DIR}/unit)
target_compile_definitions(test_authz PRIVATE TY_API_DIR="${CMAKE_SOURCE_DIR}/api")
set_tests_properties(test_authz PROPERTIES TIMEOUT 120)

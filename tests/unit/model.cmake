# Tests of control-plane/apimodel/apimodel.c (ty_apimodel) and the openapi/ drift check.
ty_unit_test(test_model SOURCES ${TY_TESTS_DIR}/unit/test_model.c LIBS ty_apimodel Threads::Threads)
target_compile_definitions(test_model PRIVATE TY_API_DIR="${CMAKE_SOURCE_DIR}/api")

add_test(NAME openapi_drift COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/openapi/generate.py --check)
set_tests_properties(openapi_drift PROPERTIES LABELS unit)

# Its libFuzzer harness is tests/fuzz (-DTY_FUZZ=ON).

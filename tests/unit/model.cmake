# Tests of control-plane/model.c (ty_model) and the openapi/ drift check.
ty_unit_test(test_model SOURCES ${TY_TESTS_DIR}/unit/test_model.c LIBS ty_model Threads::Threads)
if(TARGET test_model)
  target_compile_definitions(test_model PRIVATE TY_API_DIR="${CMAKE_SOURCE_DIR}/api")
endif()

add_test(NAME openapi_drift COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/openapi/generate.py --check)
set_tests_properties(openapi_drift PROPERTIES LABELS unit)

# libFuzzer harness: clang only, so a gcc build skips it. A short smoke run is registered
# under label "fuzz"; run it longer by hand: ./fuzz_model -max_total_time=60
if(CMAKE_C_COMPILER_ID MATCHES "Clang")
  # model.c is compiled into the harness itself so that libFuzzer sees its coverage.
  get_target_property(ty_model_sources ty_model SOURCES)
  add_executable(fuzz_model ${TY_TESTS_DIR}/fuzz/fuzz_model.c ${ty_model_sources})
  target_compile_options(fuzz_model PRIVATE -fsanitize=fuzzer)
  target_link_options(fuzz_model PRIVATE -fsanitize=fuzzer)
  target_include_directories(fuzz_model PRIVATE $<TARGET_PROPERTY:ty_model,INTERFACE_INCLUDE_DIRECTORIES>)
  target_link_libraries(fuzz_model PRIVATE ty_core PkgConfig::JANSSON PkgConfig::PCRE2 m)
  add_test(NAME fuzz_model_smoke COMMAND fuzz_model -runs=20000 -seed=1)
  set_tests_properties(fuzz_model_smoke PROPERTIES LABELS fuzz)
endif()

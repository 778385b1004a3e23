# ty_iam: IAM identity-policy parsing, validation and evaluation (jansson; no Redis, no HTTP).
add_library(ty_iam STATIC ${TY_CP_DIR}/iam.c)
target_include_directories(ty_iam PUBLIC ${TY_CP_DIR})
target_link_libraries(ty_iam PUBLIC ty_core PkgConfig::JANSSON)

# libFuzzer harness, only with clang and only on request (not part of `all`):
#   cmake --build BUILD --target fuzz_iam && BUILD/.../fuzz_iam -max_len=8192 CORPUS_DIR
if(CMAKE_C_COMPILER_ID MATCHES Clang)
  add_executable(fuzz_iam EXCLUDE_FROM_ALL ${TY_CP_DIR}/../tests/fuzz/fuzz_iam.c ${TY_CP_DIR}/iam.c)
  target_include_directories(fuzz_iam PRIVATE ${TY_CP_DIR})
  target_compile_options(fuzz_iam PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(fuzz_iam PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(fuzz_iam PRIVATE ty_core PkgConfig::JANSSON)
endif()

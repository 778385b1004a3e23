# ty_sigv4: AWS Signature Version 4 verification and signing (OpenSSL libcrypto).
add_library(ty_sigv4 STATIC ${TY_CP_DIR}/sigv4.c)
target_include_directories(ty_sigv4 PUBLIC ${TY_CP_DIR})
target_link_libraries(ty_sigv4 PUBLIC ty_core PkgConfig::CRYPTO)

# libFuzzer harness, only with clang (-fsanitize=fuzzer). ctest label "fuzz" runs a short smoke
# pass; a real campaign: ./fuzz_sigv4 -max_len=4096 -max_total_time=600 CORPUS_DIR
if(CMAKE_C_COMPILER_ID MATCHES Clang)
  add_executable(fuzz_sigv4 ${TY_CP_DIR}/../tests/fuzz/fuzz_sigv4.c ${TY_CP_DIR}/sigv4.c)
  target_include_directories(fuzz_sigv4 PRIVATE ${TY_CP_DIR})
  target_compile_options(fuzz_sigv4 PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(fuzz_sigv4 PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(fuzz_sigv4 PRIVATE ty_core PkgConfig::CRYPTO)
  add_test(NAME fuzz_sigv4 COMMAND fuzz_sigv4 -runs=20000 -max_len=2048 -seed=1)
  set_tests_properties(fuzz_sigv4 PROPERTIES LABELS fuzz)
endif()

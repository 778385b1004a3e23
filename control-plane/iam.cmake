# ty_iam: IAM identity-policy parsing, validation and evaluation (jansson; no Redis, no HTTP).
add_library(ty_iam STATIC ${TY_CP_DIR}/iam.c ${TY_CP_DIR}/iam_match.c ${TY_CP_DIR}/iam_eval.c
  ${TY_CP_DIR}/iam_validate.c)
target_include_directories(ty_iam PUBLIC ${TY_CP_DIR})
target_link_libraries(ty_iam PUBLIC ty_core PkgConfig::JANSSON)

# Its libFuzzer harness is tests/fuzz (-DTY_FUZZ=ON).

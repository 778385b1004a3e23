# ty_sigv4: AWS Signature Version 4 verification and signing, and S3's Signature Version 2
# (sigv2.c) (OpenSSL libcrypto).
add_library(ty_sigv4 STATIC ${TY_CP_DIR}/sigv4.c ${TY_CP_DIR}/sigv2.c)
target_include_directories(ty_sigv4 PUBLIC ${TY_CP_DIR})
target_link_libraries(ty_sigv4 PUBLIC ty_core PkgConfig::CRYPTO)

# Its libFuzzer harness is tests/fuzz (-DTY_FUZZ=ON).

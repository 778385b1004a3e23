# ty_s3: the S3 data plane - the embedded object store (objstore.c; objstore_list.c listing,
# objstore_multipart.c multipart uploads) and the S3 REST API
# (ops/s3.c; ops/s3_body.c: aws-chunked bodies, checksums, chunk signatures) and STS
# GetCallerIdentity (ops/sts.c); auth.c turns a SigV4 signature into a verified principal for
# every front end (S3, STS, and through ty_server the JSON services and IAM).
if(NOT TARGET PkgConfig::ZLIB)
  pkg_check_modules(ZLIB REQUIRED IMPORTED_TARGET zlib)
endif()
# ty_s3uri: "s3://bucket/key" parsing, shared by the object store's users (agent, ops).
add_library(ty_s3uri STATIC ${TY_CP_DIR}/s3uri.c)
target_include_directories(ty_s3uri PUBLIC ${TY_CP_DIR})
target_link_libraries(ty_s3uri PUBLIC ty_core)

add_library(ty_s3 STATIC ${TY_CP_DIR}/objstore.c ${TY_CP_DIR}/objstore_list.c
  ${TY_CP_DIR}/objstore_multipart.c ${TY_CP_DIR}/objstore_remote.c
  ${TY_CP_DIR}/s3client.c ${TY_CP_DIR}/ops/s3_proxy.c ${TY_CP_DIR}/ops/s3.c ${TY_CP_DIR}/ops/s3_auth.c
  ${TY_CP_DIR}/ops/s3_bucket.c ${TY_CP_DIR}/ops/s3_object.c ${TY_CP_DIR}/ops/s3_body.c
  ${TY_CP_DIR}/ops/sts.c ${TY_CP_DIR}/auth.c ${TY_CP_DIR}/worker.c)
target_include_directories(ty_s3 PUBLIC ${TY_CP_DIR})
target_link_libraries(ty_s3 PUBLIC ty_http ty_authz ty_s3uri ty_store ty_sigv4 ty_core PkgConfig::CRYPTO PkgConfig::JANSSON
  PkgConfig::HIREDIS PkgConfig::MHD PkgConfig::ZLIB PkgConfig::CURL Threads::Threads)

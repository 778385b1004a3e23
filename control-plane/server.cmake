# trainyard-server: links every control-plane module. Built once all modules exist.
include(${TY_CP_DIR}/console.cmake)
if(TARGET ty_sigv4 AND TARGET ty_model AND TARGET ty_store AND TARGET ty_docker AND TARGET ty_agent)
  add_library(ty_server STATIC
    ${TY_CP_DIR}/route.c ${TY_CP_DIR}/creds.c ${TY_CP_DIR}/redis_child.c
    ${TY_CP_DIR}/ops/training.c ${TY_CP_DIR}/ops/optable.c ${TY_CP_DIR}/ops/doc.c ${TY_CP_DIR}/ops/tags.c ${TY_CP_DIR}/ops/logs.c
    ${TY_CP_DIR}/ops/studio.c ${TY_CP_DIR}/console.c ${TY_CP_DIR}/ops/password.c
    ${TY_CP_DIR}/console_auth.c ${TY_CP_DIR}/console_html.c ${TY_CP_DIR}/console_call.c
    ${TY_CP_DIR}/console_pages.c ${TY_CP_DIR}/console_job.c ${TY_CP_DIR}/console_assets.c
    ${TY_CP_DIR}/ops/attrib.c ${TY_CP_DIR}/console_presign.c
    ${TY_CP_DIR}/console_sysmon.c
    ${TY_CONSOLE_ASSETS_C}
    ${TY_CP_DIR}/quota.c ${TY_CP_DIR}/ops/iamapi.c ${TY_CP_DIR}/ops/iamapi_users.c
    ${TY_CP_DIR}/ops/iamapi_roles.c ${TY_CP_DIR}/ops/iamapi_login.c ${TY_CP_DIR}/ops/iamapi_inline.c
    ${TY_CP_DIR}/ops/cloudwatch.c
    ${TY_CP_DIR}/ops/tuning.c ${TY_CP_DIR}/tuning.c
    ${TY_CP_DIR}/metrics_scrape.c)
  target_include_directories(ty_server PUBLIC ${TY_CP_DIR})
  target_link_libraries(ty_server PUBLIC ty_http ty_s3uri ty_tuning ty_s3 ty_agent ty_authz ty_model ty_sigv4 ty_iam ty_store ty_docker ty_core
    PkgConfig::MHD PkgConfig::JANSSON PkgConfig::CRYPTO Threads::Threads)
  add_executable(trainyard-server ${TY_CP_DIR}/server.c)
  target_link_libraries(trainyard-server PRIVATE ty_server)
  target_compile_definitions(trainyard-server PRIVATE
    TY_RUNTIME_TAR_DEFAULT="${CMAKE_BINARY_DIR}/runtime-image/trainyard-runtime.tar")
  set_target_properties(trainyard-server PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
endif()

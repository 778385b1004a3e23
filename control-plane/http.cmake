# ty_http: the HTTP server (http.c, libmicrohttpd: requests, responses, the worker pool) and
# the request metrics it records (metrics.c). Every front end (S3 in ty_s3, the rest in
# ty_server) writes its responses through it, so it sits below both.
add_library(ty_http STATIC ${TY_CP_DIR}/http.c ${TY_CP_DIR}/metrics.c)
target_include_directories(ty_http PUBLIC ${TY_CP_DIR})
target_link_libraries(ty_http PUBLIC ty_core PkgConfig::MHD PkgConfig::JANSSON Threads::Threads)

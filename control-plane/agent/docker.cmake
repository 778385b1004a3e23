# ty_docker: Docker Engine API client (Docker or Podman's compatible service) over libcurl.
add_library(ty_docker STATIC ${TY_CP_DIR}/agent/docker.c)
target_include_directories(ty_docker PUBLIC ${TY_CP_DIR}/agent)
target_link_libraries(ty_docker PUBLIC ty_core PkgConfig::CURL PkgConfig::JANSSON)

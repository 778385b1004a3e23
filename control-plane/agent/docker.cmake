# ty_docker: Docker Engine API client (Docker or Podman's compatible service) over libcurl.
add_library(ty_docker STATIC ${TY_CP_DIR}/agent/docker.c)
target_include_directories(ty_docker PRIVATE ${TY_CP_DIR}/agent)
ty_public_headers(ty_docker agent/docker.h)
target_link_libraries(ty_docker PUBLIC ty_core PkgConfig::CURL PkgConfig::JANSSON)

# test_docker: the log demultiplexer and time parser (always), then the Docker client against the
# real engine at $TY_DOCKER_HOST (default unix:///run/trainyard-podman.sock; tests/engine.sh
# starts Podman's service). Skipped (77) when no engine answers. Imports the runtime tarball
# built by the runtime_image target.
ty_unit_test(test_docker SOURCES ${TY_TESTS_DIR}/unit/test_docker.c LIBS ty_docker)
set(_ty_runtime_tar ${CMAKE_BINARY_DIR}/runtime-image/trainyard-runtime.tar)
target_compile_definitions(test_docker PRIVATE TY_RUNTIME_TAR="${_ty_runtime_tar}")
add_dependencies(test_docker runtime_image)
set_tests_properties(test_docker PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600
                     LABELS "unit;engine")
target_link_libraries(test_docker PRIVATE Threads::Threads) # the scripted engine's thread

# test_agent: the agent's pure parts (instance table, job spec, staging JSON, environment, metric
# regexes, S3 URIs, failure reasons, tar.gz) - no Redis, no engine.
ty_unit_test(test_agent SOURCES ${TY_TESTS_DIR}/unit/test_agent.c LIBS ty_agent_core)

# test_confine: a job's staged tree never leads the agent outside it (confine.h: the walker,
# the tar.gz archiver, the failure file, rm -rf, channel copies, sourcedir.tar.gz extraction,
# the staging folder's HMAC name).
ty_unit_test(test_confine SOURCES ${TY_TESTS_DIR}/unit/test_confine.c LIBS ty_agent_core)

# test_reattach: the plan an agent follows for a job whose containers an earlier agent started
# (never started again once they ran; taken over, or failed with a reason) and its run record.
ty_unit_test(test_reattach SOURCES ${TY_TESTS_DIR}/unit/test_reattach.c LIBS ty_agent_core)

# test_agent_e2e: real jobs through a private redis-server and the engine at $TY_DOCKER_HOST
# (default unix:///run/trainyard-podman.sock; tests/engine.sh starts Podman's service), with the
# runtime image imported from its tarball when missing. Exits 77 (skipped) without them.
ty_unit_test(test_agent_e2e SOURCES ${TY_TESTS_DIR}/unit/test_agent_e2e.c
             ${TY_TESTS_DIR}/unit/redis_fixture.c LIBS ty_agent PkgConfig::HIREDIS)
target_include_directories(test_agent_e2e PRIVATE ${TY_TESTS_DIR}/unit)
if(DEFINED TY_RUNTIME_TAR)
  target_compile_definitions(test_agent_e2e PRIVATE TY_RUNTIME_TAR="${TY_RUNTIME_TAR}")
endif()
add_dependencies(test_agent_e2e runtime_image)
set_tests_properties(test_agent_e2e PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600
                     LABELS "unit;engine;e2e")

# test_outbox: the agent's outbox (outbox.c) against a private redis-server: in-order replay,
# resume after a crash without a second log batch, Stop winning over a buffered Completed.
ty_unit_test(test_outbox SOURCES ${TY_TESTS_DIR}/unit/test_outbox.c
             ${CMAKE_SOURCE_DIR}/control-plane/agent/outbox.c ${TY_TESTS_DIR}/unit/redis_fixture.c LIBS ty_store)
target_include_directories(test_outbox PRIVATE ${TY_TESTS_DIR}/unit ${CMAKE_SOURCE_DIR}/control-plane/agent)
set_tests_properties(test_outbox PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)

# test_warmpool: the warm pool's match key (every member AWS compares, none it does not), which
# ended jobs keep their instance, and the pool handing each instance over once (warmpool.h).
ty_unit_test(test_warmpool SOURCES ${TY_TESTS_DIR}/unit/test_warmpool.c LIBS ty_agent)

# test_leftover: which dead agents' containers a live agent removes: ended jobs of this
# deployment only, warm pools only once over (leftover.h).
ty_unit_test(test_leftover SOURCES ${TY_TESTS_DIR}/unit/test_leftover.c LIBS ty_agent)
target_include_directories(test_leftover PRIVATE ${CMAKE_SOURCE_DIR}/control-plane/agent)

# test_gpumetrics: GPUUtilization/GPUMemoryUtilization without a GPU: the folding, no metrics when
# libnvidia-ml is absent, and the dlopen path through the profiler's stand-in NVML.
ty_unit_test(test_gpumetrics SOURCES ${TY_TESTS_DIR}/unit/test_gpumetrics.c LIBS ty_agent_core)
add_dependencies(test_gpumetrics typrof_fake_nvml)
set_tests_properties(test_gpumetrics PROPERTIES
  ENVIRONMENT "TY_TEST_FAKE_NVML=$<TARGET_FILE:typrof_fake_nvml>")

# test_ledger: the resource ledger's arithmetic (ledger.h: needs, charges, fits, a job no agent
# can ever run, the words of a job that waits) and the ledger's options (agent_resources_parse).
ty_unit_test(test_ledger SOURCES ${TY_TESTS_DIR}/unit/test_ledger.c LIBS ty_agent_core)
# test_hostcfg: one host's training container as a create request, confined (hostcfg.h).
ty_unit_test(test_hostcfg SOURCES ${TY_TESTS_DIR}/unit/test_hostcfg.c LIBS ty_agent_core)

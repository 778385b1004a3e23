# ty_agent_core: the agent's pure parts (instance table, job spec, /opt/ml staging, metric
# regexes, artifacts, the re-attach record and plan) - no Redis or engine, so unit tests link it alone.
add_library(ty_agent_core STATIC
  ${TY_CP_DIR}/agent/instances.c ${TY_CP_DIR}/agent/spec.c ${TY_CP_DIR}/agent/stage.c
  ${TY_CP_DIR}/agent/metrics.c ${TY_CP_DIR}/agent/instmetrics.c ${TY_CP_DIR}/agent/gpumetrics.c
  ${TY_CP_DIR}/agent/artifacts.c ${TY_CP_DIR}/agent/channels.c
  ${TY_CP_DIR}/agent/relay.c ${TY_CP_DIR}/agent/confine.c
  ${TY_CP_DIR}/agent/fence.c ${TY_CP_DIR}/agent/reattach.c)
target_include_directories(ty_agent_core PRIVATE ${TY_CP_DIR}/agent)
target_link_libraries(ty_agent_core PUBLIC ty_s3uri ty_core PkgConfig::ARCHIVE PkgConfig::PCRE2
  PkgConfig::JANSSON PkgConfig::CRYPTO Threads::Threads m ${CMAKE_DL_LIBS})

# ty_agent: the training agent (agent.h), embedded in trainyard-server and trainyard-agent.
# transfer.c moves bytes through the object store (ty_s3, declared by s3.cmake after this file:
# target names resolve at generate time).
if(TARGET ty_store AND TARGET ty_docker AND EXISTS ${TY_CP_DIR}/s3.cmake)
  # prof.c evaluates the profiler rules and writes the dashboard in-process through the
  # profiler's public typrof_report.h (typrof_report, declared by profiler/ later).
  add_library(ty_agent STATIC ${TY_CP_DIR}/agent/agent.c ${TY_CP_DIR}/agent/run.c
    ${TY_CP_DIR}/agent/run_logs.c ${TY_CP_DIR}/agent/run_status.c ${TY_CP_DIR}/agent/run_upload.c
    ${TY_CP_DIR}/agent/run_container.c ${TY_CP_DIR}/agent/run_reattach.c
    ${TY_CP_DIR}/agent/transfer.c ${TY_CP_DIR}/agent/prof.c ${TY_CP_DIR}/agent/access.c
    ${TY_CP_DIR}/agent/reap.c ${TY_CP_DIR}/agent/janitor.c ${TY_CP_DIR}/agent/outbox.c
    ${TY_CP_DIR}/agent/warmpool.c ${TY_CP_DIR}/agent/leftover.c)
  target_include_directories(ty_agent PRIVATE ${TY_CP_DIR}/agent)
  ty_public_headers(ty_agent agent/agent.h agent/janitor.h)
  target_link_libraries(ty_agent PUBLIC ty_agent_core ty_authz ty_s3 ty_store ty_docker ty_core typrof_report
    PkgConfig::ARCHIVE PkgConfig::PCRE2 PkgConfig::JANSSON Threads::Threads)

  add_executable(trainyard-agent ${TY_CP_DIR}/agent/main.c)
  target_link_libraries(trainyard-agent PRIVATE ty_agent)
  target_include_directories(trainyard-agent PRIVATE ${TY_CP_DIR}/agent)
  set_target_properties(trainyard-agent PROPERTIES OUTPUT_NAME trainyard-agent
    RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
endif()

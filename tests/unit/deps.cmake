# Library boundaries (docs/design.md): each probe compiles one #include with exactly the include
# folders a dependent of the library gets (those CMake computes for an EXCLUDE_FROM_ALL object
# library linking it, written out at generate time). "forbidden" passes only when the compiler
# refuses that very header; "allowed" probes are the controls that show the probe itself works.
function(ty_dep_probe name lib header expect)
  set(src ${CMAKE_CURRENT_BINARY_DIR}/dep_probe/${name}.c)
  file(CONFIGURE OUTPUT ${src} CONTENT "#include \"${header}\"\nint dep_probe_${name};\n")
  add_library(dep_probe_${name} OBJECT EXCLUDE_FROM_ALL ${src})
  target_link_libraries(dep_probe_${name} PRIVATE ${lib})
  set(dirs ${CMAKE_CURRENT_BINARY_DIR}/dep_probe/${name}.dirs)
  file(GENERATE OUTPUT ${dirs}
       CONTENT "$<JOIN:$<TARGET_PROPERTY:dep_probe_${name},INCLUDE_DIRECTORIES>,\n>\n")
  add_test(NAME deps_${name}
           COMMAND ${CMAKE_COMMAND} -DCC=${CMAKE_C_COMPILER} -DSRC=${src} -DDIRS=${dirs}
                   -DHEADER=${header} -DEXPECT=${expect} -DLIB=${lib}
                   -P ${TY_TESTS_DIR}/unit/dep_probe.cmake)
  set_tests_properties(deps_${name} PROPERTIES LABELS unit TIMEOUT 60)
endfunction()

# ops (in ty_server) never include the agent's internals; the agent's API is public.
ty_dep_probe(ops_agent_internal ty_server artifacts.h forbidden)
ty_dep_probe(ops_agent_transfer ty_server transfer.h forbidden)
ty_dep_probe(server_agent_api ty_server agent.h allowed)
# the agent sees the profiler only through typrof_report.h.
ty_dep_probe(agent_profiler_rules ty_agent rules.h forbidden)
ty_dep_probe(agent_profiler_int ty_agent typrof_int.h forbidden)
ty_dep_probe(agent_profiler_api ty_agent typrof_report.h allowed)
# the profiler's libraries show their dependents include/ alone: not the core's src/ and rules/
# (typrof_int.h, rules.h), nor the renderer's report/ (report_int.h); the public headers beside
# them compile (the controls).
ty_dep_probe(profiler_core_rules typrof_core rules.h forbidden)
ty_dep_probe(profiler_core_int typrof_core typrof_int.h forbidden)
ty_dep_probe(profiler_core_api typrof_core typrof.h allowed)
ty_dep_probe(profiler_report_private typrof_report report_int.h forbidden)
ty_dep_probe(profiler_report_rules typrof_report rules.h forbidden)
ty_dep_probe(profiler_report_api typrof_report typrof_report.h allowed)
ty_dep_probe(profiler_lib_int typrof typrof_int.h forbidden)
ty_dep_probe(profiler_lib_api typrof typrof.h allowed)
# the object store and S3 API know nothing of the container engine.
ty_dep_probe(s3_engine ty_s3api docker.h forbidden)
ty_dep_probe(server_engine ty_server docker.h allowed)
# a library's private headers: a dependent of the store, of IAM, of the S3 API or of the
# console cannot include them (store_int.h, iam_int.h, s3_int.h, console_call.h), while the
# public headers beside them compile (the controls).
ty_dep_probe(authz_store_private ty_authz store_int.h forbidden)
ty_dep_probe(authz_store_public ty_authz store.h allowed)
ty_dep_probe(authz_iam_private ty_authz iam_int.h forbidden)
ty_dep_probe(server_s3api_private ty_server s3_int.h forbidden)
ty_dep_probe(server_s3api_public ty_server s3.h allowed)
ty_dep_probe(server_console_private ty_server console_call.h forbidden)
# the object store keeps its Redis records through store_obj.h, not the store's command
# helpers (hiredis itself is a system header, so it cannot be probed).
ty_dep_probe(objstore_store_private ty_objstore store_int.h forbidden)
ty_dep_probe(objstore_store_obj ty_objstore store_obj.h allowed)
# no header cycle: the fronts and the console do not see the router.
ty_dep_probe(console_router ty_console route.h forbidden)
ty_dep_probe(s3api_router ty_s3api route.h forbidden)
# the agent sees the object store, not the S3 HTTP front end nor libmicrohttpd (the Slurm
# executor's one listener, the launchers', is ty_launch's, whose HTTP layer stays private).
ty_dep_probe(agent_http ty_agent http.h forbidden)
ty_dep_probe(agent_s3api ty_agent s3.h forbidden)
ty_dep_probe(agent_objstore ty_agent objstore.h allowed)
# the core depends on nothing of the control plane.
ty_dep_probe(core_store ty_core store.h forbidden)
ty_dep_probe(core_self ty_core ty_buf.h allowed)
# the training compiler's internals (compiler/src/) stay inside libtyc: a dependent (the CLI,
# the built-in trainer, the tools) sees tyc.h alone; its tests name src/ themselves.
ty_dep_probe(tyc_private tyc tyc_int.h forbidden)
ty_dep_probe(tyc_cuda_private tyc cuda_int.h forbidden)
ty_dep_probe(tyc_model_private tyc model_int.h forbidden)
ty_dep_probe(tyc_public tyc tyc.h allowed)

# The libraries' links against docs/design.md's allowed graph (symbols each takes from the
# others, read with nm from the built archives; no cycle).
add_test(NAME deps_link_graph
         COMMAND /usr/bin/env python3 ${CMAKE_SOURCE_DIR}/scripts/link-graph.py ${CMAKE_BINARY_DIR})
set_tests_properties(deps_link_graph PROPERTIES LABELS unit TIMEOUT 60 SKIP_RETURN_CODE 77)

# Unit tests of session.c and auth.c against a private redis-server (exit 77 = skipped when
# absent), and ty-session-tool: the integration tests' way to grant and revoke container tokens
# in a live server's Redis with the agent's own functions (tests/integration/test_sessions.py).
ty_unit_test(test_session SOURCES ${TY_TESTS_DIR}/unit/test_session.c ${TY_TESTS_DIR}/unit/redis_fixture.c
             LIBS ty_front ty_store ty_sigv4)
set_tests_properties(test_session PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
add_executable(ty-session-tool ${TY_TESTS_DIR}/integration/session_tool.c)
target_link_libraries(ty-session-tool PRIVATE ty_store)
set_target_properties(ty-session-tool PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)

# test_relay: the agent's relay into job containers (relay.c) over real sockets, and the
# container environment it implies (stage_env) - no Redis, no engine.
ty_unit_test(test_relay SOURCES ${TY_TESTS_DIR}/unit/test_relay.c LIBS ty_agent_core)
set_tests_properties(test_relay PROPERTIES TIMEOUT 120)

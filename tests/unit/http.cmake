# test_http: the front end's PROXY protocol listener (http_proxy.c) over real sockets: the
# header parser, the allow list, and the address a proxied request is served under.
ty_unit_test(test_http SOURCES ${TY_TESTS_DIR}/unit/test_http.c LIBS ty_http)
set_tests_properties(test_http PROPERTIES TIMEOUT 60)

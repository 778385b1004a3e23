# Unit tests of ty_objstore (objstore.c) and ty_s3api (s3_body.c: the aws-chunked receiver):
# a private redis-server each (exit 77 = skipped when absent).
ty_unit_test(test_objstore SOURCES ${TY_TESTS_DIR}/unit/test_objstore.c
             ${TY_TESTS_DIR}/unit/redis_fixture.c LIBS ty_s3api)
set_tests_properties(test_objstore PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
# s3client.c (the --s3-endpoint client) and the XML reader it shares with the S3 API.
ty_unit_test(test_s3client SOURCES ${TY_TESTS_DIR}/unit/test_s3client.c LIBS ty_objstore)

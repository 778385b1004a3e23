# SigV4: AWS test-suite vectors, presigned URLs, skew, expiry, malformed input.
ty_unit_test(test_sigv4 SOURCES ${TY_TESTS_DIR}/unit/test_sigv4.c LIBS ty_sigv4)

# SigV2 (S3): vectors from botocore's signers (tests/unit/sigv2_vectors.py), expiry, skew.
ty_unit_test(test_sigv2 SOURCES ${TY_TESTS_DIR}/unit/test_sigv2.c LIBS ty_sigv4)

# IAM policies: grammar and IAM's validation messages, the evaluation logic, every condition
# operator (IfExists, ForAnyValue/ForAllValues, missing keys), variables, hostile inputs.
ty_unit_test(test_iam SOURCES ${TY_TESTS_DIR}/unit/test_iam.c LIBS ty_iam)

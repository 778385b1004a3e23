# Documentation checked against the tree. docs_redis_keys: every Redis key the code builds is in
# docs/internals/redis-keys.md and every key listed there is still built (scripts/redis-keys.py);
# docs_redis_keys_selftest shows that check failing on made-up trees and passing on a good one.
add_test(NAME docs_redis_keys
         COMMAND /usr/bin/env python3 ${CMAKE_SOURCE_DIR}/scripts/redis-keys.py ${CMAKE_SOURCE_DIR})
set_tests_properties(docs_redis_keys PROPERTIES LABELS unit TIMEOUT 60)
add_test(NAME docs_redis_keys_selftest
         COMMAND /usr/bin/env python3 ${CMAKE_SOURCE_DIR}/scripts/redis-keys.py --self-test)
set_tests_properties(docs_redis_keys_selftest PROPERTIES LABELS unit TIMEOUT 60)

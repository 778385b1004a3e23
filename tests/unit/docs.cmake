# Documentation and habits checked against the tree. docs_redis_keys: every Redis key the code
# builds is in docs/internals/redis-keys.md and every key listed there is still built
# (scripts/redis-keys.py; its --self-test shows it fails on made-up trees). docs_paths: every
# repository path, `path:function` and `function()` that docs/internals/*.md and docs/design.md
# cite exists in the tree (scripts/doc-paths.py states the rule; its --self-test shows it fails
# on made-up docs). style_commits: the commits made since the script's baseline have a subject
# of at most 72 characters, a blank line and a body (scripts/commit-check.py; 77, skipped,
# outside a git clone holding the baseline).
add_test(NAME docs_redis_keys
         COMMAND /usr/bin/env python3 ${CMAKE_SOURCE_DIR}/scripts/redis-keys.py ${CMAKE_SOURCE_DIR})
set_tests_properties(docs_redis_keys PROPERTIES LABELS unit TIMEOUT 60)
add_test(NAME docs_redis_keys_selftest
         COMMAND /usr/bin/env python3 ${CMAKE_SOURCE_DIR}/scripts/redis-keys.py --self-test)
set_tests_properties(docs_redis_keys_selftest PROPERTIES LABELS unit TIMEOUT 60)
add_test(NAME docs_paths
         COMMAND /usr/bin/env python3 ${CMAKE_SOURCE_DIR}/scripts/doc-paths.py ${CMAKE_SOURCE_DIR})
set_tests_properties(docs_paths PROPERTIES LABELS unit TIMEOUT 60)
add_test(NAME docs_paths_selftest
         COMMAND /usr/bin/env python3 ${CMAKE_SOURCE_DIR}/scripts/doc-paths.py --self-test)
set_tests_properties(docs_paths_selftest PROPERTIES LABELS unit TIMEOUT 60)
add_test(NAME style_commits
         COMMAND /usr/bin/env python3 ${CMAKE_SOURCE_DIR}/scripts/commit-check.py
         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(style_commits PROPERTIES LABELS unit TIMEOUT 60 SKIP_RETURN_CODE 77)

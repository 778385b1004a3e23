# The style check's size rules (scripts/style-check.py --self-test): a function over 150 lines
# and a file over 1,500 are found on made-up sources, a function of exactly 150 is not, and
# braces in macros, initialisers, comments and strings are not taken for function bodies.
add_test(NAME style_sizes
         COMMAND /usr/bin/env python3 ${CMAKE_SOURCE_DIR}/scripts/style-check.py --self-test)
set_tests_properties(style_sizes PROPERTIES LABELS unit TIMEOUT 30)

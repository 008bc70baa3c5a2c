# Logging, --trace (host part), print --dot and --json (observe.py).
add_test(NAME cli.observe COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/observe.py $<TARGET_FILE:sinter_cli>)
set_tests_properties(cli.observe PROPERTIES PASS_REGULAR_EXPRESSION "observe: all checks passed")

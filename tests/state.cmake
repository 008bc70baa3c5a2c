# state.cmake: state kept across runs (docs/DESIGN.md, State).
#   state.api   tests/state/test_state.c: runs accumulate, read, reset and
#               write on ref and cpu against sums worked out by hand; the
#               printer's fixed point; the parser's errors for misused state
add_executable(test_state ${CMAKE_CURRENT_SOURCE_DIR}/state/test_state.c)
target_link_libraries(test_state PRIVATE sinter)
add_test(NAME state.api COMMAND test_state)

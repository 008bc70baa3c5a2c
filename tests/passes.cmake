# passes.cmake: the graph passes (passes/*.c).
#   passes.golden  sinter print tests/passes/NAME.sir --passes LIST ==
#                  NAME.expected ("# passes: LIST" and "# precision: P"
#                  lines in each file; tests/run_passes_golden.sh)
# The unit tests tests/unit/test_{rewrite,canon,pass_random}.c register
# themselves (unit.rewrite, unit.canon, unit.pass_random).
find_program(BASH_PROGRAM bash REQUIRED)
add_test(NAME passes.golden
  COMMAND ${BASH_PROGRAM} ${CMAKE_CURRENT_LIST_DIR}/run_passes_golden.sh $<TARGET_FILE:sinter_cli> ${CMAKE_SOURCE_DIR})

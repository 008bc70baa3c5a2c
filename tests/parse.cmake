# parse.cmake: the tests of the .sir format (frontend/sir_*.c, ir/print.c).
#   parse.golden     sinter print tests/golden/NAME.sir == NAME.expected
#   parse.roundtrip  print, parse, print is a fixed point for every
#                    tests/golden/*.sir and samples/*.sir (globbed at test time)
#   parse.malformed  sinter check tests/malformed/NAME.sir exits 1 with
#                    exactly NAME.err on stderr
# The unit test tests/unit/test_parse.c registers itself (unit.parse).
find_program(BASH_PROGRAM bash REQUIRED)
add_test(NAME parse.golden
  COMMAND ${BASH_PROGRAM} ${CMAKE_CURRENT_LIST_DIR}/run_golden.sh $<TARGET_FILE:sinter_cli> ${CMAKE_SOURCE_DIR} golden)
add_test(NAME parse.roundtrip
  COMMAND ${BASH_PROGRAM} ${CMAKE_CURRENT_LIST_DIR}/run_golden.sh $<TARGET_FILE:sinter_cli> ${CMAKE_SOURCE_DIR} roundtrip)
add_test(NAME parse.malformed
  COMMAND ${BASH_PROGRAM} ${CMAKE_CURRENT_LIST_DIR}/run_malformed.sh $<TARGET_FILE:sinter_cli> ${CMAKE_CURRENT_LIST_DIR})

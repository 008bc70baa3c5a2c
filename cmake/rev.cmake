# rev.cmake: run at every build (cmake -P) to write OUT, a header with the
# source tree's git revision (SINTER_REV), rewritten only when it changes so
# that a build after no commit relinks nothing. Outside a git checkout, or
# without git, the revision is "unknown".
execute_process(COMMAND git -C "${SRC}" describe --always --dirty --abbrev=12
  OUTPUT_VARIABLE rev OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR rev STREQUAL "")
  set(rev "unknown")
endif()
set(text "#define SINTER_REV \"${rev}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE "${OUT}" "${text}")
endif()

# state.cmake: state kept across runs (docs/DESIGN.md, State) and
# `sinter generate` (docs/CLI.md).
#   state.api   tests/state/test_state.c: runs accumulate, read, reset and
#               write on ref and cpu against sums worked out by hand; the
#               printer's fixed point; the parser's errors for misused state
add_executable(test_state ${CMAKE_CURRENT_SOURCE_DIR}/state/test_state.c)
target_link_libraries(test_state PRIVATE sinter)
target_compile_definitions(test_state PRIVATE SINTER_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
add_test(NAME state.api COMMAND test_state)
#   state.generate  tests/state/check_generate.py: sinter generate's greedy
#               tokens on tiny_llama.sir (KV cache as state) equal those of
#               re-running the whole sequence with no cache, on ref and cpu;
#               sampling is seeded; top-k 1 is greedy
if(SINTER_PYTHON)
  set(_devices ref)
  if(SINTER_LLVM_LIBRARY)
    list(APPEND _devices cpu)
  endif()
  add_test(NAME state.generate
    COMMAND ${SINTER_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/state/check_generate.py $<TARGET_FILE:sinter_cli>
            ${CMAKE_CURRENT_SOURCE_DIR}/state/tiny_llama.sir ${_devices})
  set_tests_properties(state.generate PROPERTIES PASS_REGULAR_EXPRESSION "generate: all checks passed" TIMEOUT 300)
endif()
#   state.cli_state  --state OUT=IN on a functional model: the input and
#               output become a state and its update (printed back as such)
add_test(NAME state.cli_state COMMAND sinter_cli print ${CMAKE_CURRENT_SOURCE_DIR}/state/functional.sir
         --state present=past)
set_tests_properties(state.cli_state PROPERTIES
  PASS_REGULAR_EXPRESSION "func @main\\(%x: f32\\[2,3\\], state %past: f32\\[2,3\\]\\) -> \\(f32\\[2,3\\]\\).*update %past = %present")

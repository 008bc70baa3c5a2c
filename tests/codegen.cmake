# Every sample's kernels are rendered and compiled with NVRTC for sm_80 and
# sm_90, with no GPU: generated code that does not compile fails CI.
if(CUDAToolkit_FOUND)
  foreach(sample mlp resnet50 gpt2 resblock)
    foreach(sm 80 90)
      add_test(NAME codegen.nvrtc.${sample}.sm_${sm}
        COMMAND sinter_cli compile ${CMAKE_SOURCE_DIR}/samples/${sample}.sir --shape N=2 --target sm_${sm} --no-cache)
      set_tests_properties(codegen.nvrtc.${sample}.sm_${sm} PROPERTIES TIMEOUT 600)
    endforeach()
  endforeach()
endif()

# GPU tests: every tests/gpu/test_cuda_*.c is a program built with the
# harness (gpu_check.c) and registered with the label "gpu". Without a GPU
# they print "skipped: no CUDA device (why)" and pass; scripts/gpu-check runs
# them on the GPU machine. They need the CUDA toolkit's headers to build.
if(CUDAToolkit_FOUND)
  file(GLOB GPU_TESTS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/gpu/test_cuda_*.c)
  foreach(src ${GPU_TESTS})
    get_filename_component(name ${src} NAME_WE)
    string(REPLACE "test_cuda_" "" short ${name})
    add_executable(gpu_${name} ${src} ${CMAKE_CURRENT_SOURCE_DIR}/gpu/gpu_check.c ${CMAKE_CURRENT_SOURCE_DIR}/gpu/gpu_conv.c)
    target_include_directories(gpu_${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/gpu)
    target_link_libraries(gpu_${name} PRIVATE sinter)
    add_test(NAME gpu.${short} COMMAND gpu_${name} WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
    set_tests_properties(gpu.${short} PROPERTIES LABELS gpu TIMEOUT 600)
  endforeach()
endif()
# benchmarks/conv_bench.c: the conv kernels alone on ResNet-50's shapes
# (benchmarks/conv_bench.py runs it beside cuDNN).
if(CUDAToolkit_FOUND)
  add_executable(conv_bench ${CMAKE_SOURCE_DIR}/benchmarks/conv_bench.c)
  target_link_libraries(conv_bench PRIVATE sinter)
endif()

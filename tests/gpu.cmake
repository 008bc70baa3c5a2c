# GPU tests: every tests/gpu/test_cuda_*.c is a program built with the
# harness (gpu_check.c) and registered with the label "gpu". Without a GPU
# they print "skipped: no CUDA device (why)" and exit with GPU_SKIP (77),
# which ctest counts as skipped (SKIP_RETURN_CODE), not passed; their random
# draws print their seed and take $SINTER_TEST_SEED. scripts/gpu-check runs
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
    set_tests_properties(gpu.${short} PROPERTIES LABELS gpu TIMEOUT 600 SKIP_RETURN_CODE 77)
  endforeach()
endif()
# The skip contract above, checked without a GPU too (tests/gpu/check_skip.py):
# every gpu-labelled test declares SKIP_RETURN_CODE 77, and a GPU test with
# no device exits 77 (with one, it prints the seed $SINTER_TEST_SEED sets).
if(CUDAToolkit_FOUND)
  find_package(Python3 COMPONENTS Interpreter QUIET)
  if(Python3_Interpreter_FOUND)
    add_test(NAME tests.gpu_skip COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/gpu/check_skip.py
      ${CMAKE_BINARY_DIR})
    set_tests_properties(tests.gpu_skip PROPERTIES PASS_REGULAR_EXPRESSION "gpu skip contract: all checks passed")
  endif()
endif()
# benchmarks/conv_bench.c: the conv kernels alone on ResNet-50's shapes
# (benchmarks/conv_bench.py runs it beside cuDNN).
if(CUDAToolkit_FOUND)
  add_executable(conv_bench ${CMAKE_SOURCE_DIR}/benchmarks/conv_bench.c)
  target_link_libraries(conv_bench PRIVATE sinter)
endif()

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
  # the reduced precisions pick other conv kernels (the tensor-core
  # pipeline on sm_80, the wgmma conv on sm_90, the few-channel stem):
  # ResNet-50 in bf16 and under TF32 (fp16 takes bf16's kernels with the
  # other type; GPT-2's bf16 kernels are compiled by unit.cuda_tune_space)
  foreach(prec bf16 tf32)
    foreach(sm 80 90)
      add_test(NAME codegen.nvrtc.resnet50_${prec}.sm_${sm}
        COMMAND sinter_cli compile ${CMAKE_SOURCE_DIR}/samples/resnet50.sir --shape N=2 --precision ${prec}
                --target sm_${sm} --no-cache)
      set_tests_properties(codegen.nvrtc.resnet50_${prec}.sm_${sm} PROPERTIES TIMEOUT 600)
    endforeach()
  endforeach()
endif()
# samples/llama.sir (a symbol T, state): its decode step (T=1) and a
# prefill (T=7), each for one arch
if(CUDAToolkit_FOUND)
  add_test(NAME codegen.nvrtc.llama_decode.sm_90
    COMMAND sinter_cli compile ${CMAKE_SOURCE_DIR}/samples/llama.sir --shape N=1,T=1 --target sm_90 --no-cache)
  add_test(NAME codegen.nvrtc.llama_prefill.sm_80
    COMMAND sinter_cli compile ${CMAKE_SOURCE_DIR}/samples/llama.sir --shape N=1,T=7 --target sm_80 --no-cache)
  set_tests_properties(codegen.nvrtc.llama_decode.sm_90 codegen.nvrtc.llama_prefill.sm_80 PROPERTIES TIMEOUT 600)
endif()
# The .sir files under tests/nvrtc/ hold ops no sample uses (issue 13's
# indexing, scans, tests and activations): compiled the same way, and run
# once on ref so that the graph stays executable.
file(GLOB NVRTC_SIRS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/nvrtc/*.sir)
foreach(sir ${NVRTC_SIRS})
  get_filename_component(name ${sir} NAME_WE)
  add_test(NAME codegen.ref.${name}
    COMMAND sinter_cli run ${sir} --shape N=2 --init random --device ref)
  if(CUDAToolkit_FOUND)
    foreach(sm 80 90)
      add_test(NAME codegen.nvrtc.${name}.sm_${sm}
        COMMAND sinter_cli compile ${sir} --shape N=2 --target sm_${sm} --no-cache)
      set_tests_properties(codegen.nvrtc.${name}.sm_${sm} PROPERTIES TIMEOUT 600)
    endforeach()
  endif()
endforeach()
# ResNet-50 at batch 32 in bf16 and under TF32 for sm_90: its convolutions
# take the wgmma kernel (cg_conv_wg.c, sm_90a) in the tiles of a full grid
# (batch 2 above takes the small ones); and that kernel alone over the GPU
# test's grid of shapes, configs, dtypes and epilogues (compile-only mode).
if(CUDAToolkit_FOUND)
  foreach(prec bf16 tf32)
    add_test(NAME codegen.nvrtc.resnet50_bs32_${prec}.sm_90
      COMMAND sinter_cli compile ${CMAKE_SOURCE_DIR}/samples/resnet50.sir --shape N=32 --target sm_90
              --precision ${prec} --no-cache)
    set_tests_properties(codegen.nvrtc.resnet50_bs32_${prec}.sm_90 PROPERTIES TIMEOUT 600)
  endforeach()
  add_test(NAME codegen.nvrtc.conv_wg.sm_90 COMMAND gpu_test_cuda_conv_wg compile)
  # 77: "skipped: no NVRTC" (tests/gpu/gpu_check.h GPU_SKIP), a skip for ctest
  set_tests_properties(codegen.nvrtc.conv_wg.sm_90 PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
endif()
# The tiled depthwise conv (cg_conv_dw.c, variant 10) over the GPU test's
# shapes, dtypes, layouts and epilogues (its compile-only mode), for sm_80
# and sm_90.
if(CUDAToolkit_FOUND)
  foreach(sm 80 90)
    add_test(NAME codegen.nvrtc.conv_dw.sm_${sm} COMMAND gpu_test_cuda_conv_dw compile ${sm})
    set_tests_properties(codegen.nvrtc.conv_dw.sm_${sm} PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
  endforeach()
endif()
# Fused kernels of seeded random graphs (tests/gpu/test_cuda_fuse.c in its
# compile-only mode): lowered and compiled with NVRTC, no GPU needed; the
# GPU machine runs the same graphs against the reference interpreter.
if(CUDAToolkit_FOUND)
  add_test(NAME codegen.nvrtc.fuse_random.sm_90 COMMAND gpu_test_cuda_fuse 100 1 90)
  add_test(NAME codegen.nvrtc.fuse_random.sm_80 COMMAND gpu_test_cuda_fuse 50 101 80)
  set_tests_properties(codegen.nvrtc.fuse_random.sm_90 codegen.nvrtc.fuse_random.sm_80 PROPERTIES TIMEOUT 600
    SKIP_RETURN_CODE 77)
endif()
# Strict NVRTC (runtime/cuda_nvrtc.h): in these compile tests, ptxas's
# resource report is checked for every kernel: a kernel family that spills
# registers, or whose wgmma is serialized (C7510), fails CI. The search
# space's every config (unit.cuda_tune_space) is held to the same.
if(CUDAToolkit_FOUND)
  get_property(_tests DIRECTORY PROPERTY TESTS)
  foreach(t ${_tests})
    if(t MATCHES "^codegen\\.nvrtc\\." OR t STREQUAL "unit.cuda_tune_space")
      set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT SINTER_NVRTC_STRICT=1)
    endif()
    # the skinny-product samples: the family is off by default (cg_gemv.h),
    # its rule on here so that its kernels are the ones compiled
    if(t MATCHES "^codegen\\.nvrtc\\.(gemv|decode_mlp)\\.")
      set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT SINTER_GEMV=1)
    endif()
  endforeach()
endif()

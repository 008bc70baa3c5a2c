# Row groups (issue 27): norms and softmaxes as exporters write them
# (tests/rows/*.sir, decomposed, with their bf16 casts) are one kernel each
# on cuda. The fusion groups must be tests/rows/NAME.groups exactly; the
# graph runs on ref; its kernels compile with NVRTC for sm_80 and sm_90
# (strict: no spills). The GPU checks their numerics against the reference
# interpreter: gpu_test_cuda_fuse rows (tests/gpu/test_cuda_fuse.c).
# On the cpu device (when built) they are one LLVM kernel each too: the
# plan's steps (`sinter print --device cpu`) must be tests/rows/NAME.cpu;
# unit.cpu_rows (tests/unit/test_cpu_rows.c) checks their numerics against
# the reference interpreter in f32 and bf16.
file(GLOB ROWS_SIRS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/rows/*.sir)
foreach(sir ${ROWS_SIRS})
  get_filename_component(name ${sir} NAME_WE)
  string(REGEX REPLACE "\\.sir$" ".groups" want ${sir})
  add_test(NAME codegen.rows.${name}.groups
    COMMAND ${BASH_PROGRAM} -c "\"$1\" print --mode default --groups \"$2\" --shape N=2 | diff -u \"$3\" -"
            groups $<TARGET_FILE:sinter_cli> ${sir} ${want})
  string(REGEX REPLACE "\\.sir$" ".cpu" cpuwant ${sir})
  if(SINTER_LLVM_LIBRARY AND EXISTS ${cpuwant})
    add_test(NAME codegen.rows.${name}.cpu
      COMMAND ${BASH_PROGRAM} -c "\"$1\" print --mode default --device cpu \"$2\" --shape N=2 | diff -u \"$3\" -"
              cpu $<TARGET_FILE:sinter_cli> ${sir} ${cpuwant})
  endif()
  add_test(NAME codegen.ref.rows_${name}
    COMMAND sinter_cli run ${sir} --shape N=2 --init random --device ref)
  if(CUDAToolkit_FOUND)
    foreach(sm 80 90)
      add_test(NAME codegen.nvrtc.rows_${name}.sm_${sm}
        COMMAND sinter_cli compile ${sir} --shape N=2 --target sm_${sm} --no-cache)
      set_tests_properties(codegen.nvrtc.rows_${name}.sm_${sm} PROPERTIES TIMEOUT 600
        ENVIRONMENT SINTER_NVRTC_STRICT=1)
    endforeach()
  endif()
endforeach()

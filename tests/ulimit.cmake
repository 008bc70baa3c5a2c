# No command hangs when the address space is short: OpenBLAS is loaded only
# by a cpu plan that calls it, with one thread, after its buffers are
# known to fit (run_ulimit.sh; issue 31).
if(SINTER_LLVM_LIBRARY)
  if(SINTER_SANITIZE OR SINTER_TSAN)
    set(ULIMIT_SANITIZED --sanitized) # ulimit -v cannot apply: the LD_DEBUG checks only
  endif()
  add_test(NAME cpu.ulimit COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/run_ulimit.sh $<TARGET_FILE:sinter_cli> ${ULIMIT_SANITIZED})
  set_tests_properties(cpu.ulimit PROPERTIES TIMEOUT 200)
endif()

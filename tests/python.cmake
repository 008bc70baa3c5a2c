# The Python package (python/): pip-installed into a scratch folder and run
# with NumPy on the reference interpreter (run_python.sh); needs
# -DSINTER_PYTHON=/path/to/python with numpy (scripts/test's venv).
add_executable(python_layout ${CMAKE_CURRENT_SOURCE_DIR}/python/layout.c)
target_link_libraries(python_layout PRIVATE sinter)
if(SINTER_PYTHON AND NOT SINTER_TSAN)
  set(SINTER_PRELOAD "")
  if(SINTER_SANITIZE)
    execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libasan.so
      OUTPUT_VARIABLE SINTER_PRELOAD OUTPUT_STRIP_TRAILING_WHITESPACE)
  endif()
  add_test(NAME python.numpy COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/run_python.sh ${SINTER_PYTHON}
    ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR} $<TARGET_FILE:python_layout>)
  set_tests_properties(python.numpy PROPERTIES ENVIRONMENT "SINTER_PRELOAD=${SINTER_PRELOAD}"
    PASS_REGULAR_EXPRESSION "python.numpy: all checks passed")
  set_tests_properties(python.numpy PROPERTIES DEPENDS install.consume)
endif()

# sinter.compile of torch modules against their own outputs (tests/gpu/;
# prints "skipped: no CUDA device" and exits 77, a skip for ctest, without
# torch or a GPU).
add_test(NAME gpu.torch COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/gpu/test_torch.py)
set_tests_properties(gpu.torch PROPERTIES LABELS gpu TIMEOUT 600 SKIP_RETURN_CODE 77
  ENVIRONMENT "SINTER_LIBRARY=${CMAKE_BINARY_DIR}/libsinter.so.0;PYTHONPATH=${CMAKE_SOURCE_DIR}/python")

# sinter.compile(module, device="cpu" / "ref" / default) against the
# module's own outputs, no GPU needed (tests/python/test_torch_cpu.py);
# exits 77, a skip, without torch and onnxscript (scripts/test's venv has
# neither); "ref" only without the cpu device.
if(NOT SINTER_TSAN)
  set(SINTER_TORCH_ENV "SINTER_LIBRARY=${CMAKE_BINARY_DIR}/libsinter.so.0;PYTHONPATH=${CMAKE_SOURCE_DIR}/python;PYTHONDONTWRITEBYTECODE=1")
  if(SINTER_SANITIZE)
    execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libasan.so
      OUTPUT_VARIABLE SINTER_TORCH_ASAN OUTPUT_STRIP_TRAILING_WHITESPACE)
    list(APPEND SINTER_TORCH_ENV "LD_PRELOAD=${SINTER_TORCH_ASAN}" "ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0")
  endif()
  add_test(NAME python.torch COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/python/test_torch_cpu.py)
  set_tests_properties(python.torch PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77 ENVIRONMENT "${SINTER_TORCH_ENV}")
endif()

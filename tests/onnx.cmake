# onnx.cmake: ONNX import checked against the ONNX project's backend node
# tests (tests/onnx/run_node_tests.py) and against onnxruntime on small
# models (tests/onnx/crosscheck_ort.py). Needs a python with the packages of
# tests/requirements.txt (onnx, onnxruntime, numpy): configure with
# -DSINTER_PYTHON=/path/to/python (scripts/test does).
if(SINTER_PYTHON)
  add_test(NAME onnx.node_tests
    COMMAND ${SINTER_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/onnx/run_node_tests.py $<TARGET_FILE:sinter_cli>)
  add_test(NAME onnx.crosscheck_ort
    COMMAND ${SINTER_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/onnx/crosscheck_ort.py $<TARGET_FILE:sinter_cli>)
  # first_diff.py (each intermediate of an import against onnxruntime) on a
  # small SegFormer-style graph: ref and cpu match at every node, a
  # perturbed value is named with its node, an export difference is told
  # apart from a sinter one (issue 26, item 5).
  add_test(NAME onnx.first_diff
    COMMAND ${SINTER_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/onnx/test_first_diff.py $<TARGET_FILE:sinter_cli>)
  # LSTM, GRU, RNN, GridSample, 3-d Conv and ConvTranspose, built at import
  # from the IR's ops, against onnxruntime on ref and cpu (tests/onnx/rnn/,
  # issue 31 item 9); with the refusals' and the unsupported-op message.
  add_test(NAME onnx.rnn
    COMMAND ${SINTER_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/onnx/rnn/check.py $<TARGET_FILE:sinter_cli>
      --devices ref$<$<BOOL:${SINTER_LLVM_LIBRARY}>:,cpu>)
  set_tests_properties(onnx.node_tests onnx.crosscheck_ort onnx.first_diff onnx.rnn PROPERTIES LABELS onnx TIMEOUT 900)
endif()
# The kernels those ops become, compiled with NVRTC for sm_90 with no GPU
# (as codegen.cmake does for the samples): one LSTM, GridSample (opset 20's
# model: compiling grid_sample16's in the ASan build ended in LeakSanitizer's
# "Tracer caught signal 11" in about half the runs, while LSan scanned a
# bogus dynamic-TLS range ("DTLS 8 at 0xfbd-0x200000020bf") after NVRTC: a
# sanitizer fault, not a leak; 0 in 5 for the three below, 2026-11-28),
# the 3-d convolutions (GRU's kernels are LSTM's kinds).
if(CUDAToolkit_FOUND)
  foreach(m lstm_bidir grid_sample20 conv3d)
    add_test(NAME codegen.nvrtc.onnx_${m}.sm_90
      COMMAND sinter_cli compile ${CMAKE_CURRENT_SOURCE_DIR}/onnx/rnn/${m}.onnx --target sm_90 --no-cache)
    set_tests_properties(codegen.nvrtc.onnx_${m}.sm_90 PROPERTIES TIMEOUT 600)
  endforeach()
endif()
# Small real exports (scripts/coverage.py --save-small on the GPU machine),
# registered once tests/onnx/models/ holds one.
file(GLOB SINTER_ONNX_MODELS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/onnx/models/*/model.onnx)
if(SINTER_PYTHON AND SINTER_ONNX_MODELS)
  add_test(NAME onnx.models
    COMMAND ${SINTER_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/onnx/run_models.py $<TARGET_FILE:sinter_cli>)
  set_tests_properties(onnx.models PROPERTIES LABELS onnx TIMEOUT 900)
endif()

# ONNX graph inputs that have an initializer: inputs with a default from IR
# version 4, against onnxruntime on ref and cpu (tests/onnx/input_defaults.py;
# a GPU machine passes cuda too). Needs a python with numpy, onnx and
# onnxruntime (-DSINTER_PYTHON).
if(SINTER_PYTHON)
  add_test(NAME onnx.input_defaults
    COMMAND ${SINTER_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/onnx/input_defaults.py $<TARGET_FILE:sinter_cli>)
  set_tests_properties(onnx.input_defaults PROPERTIES PASS_REGULAR_EXPRESSION "input_defaults: all checks passed")
endif()

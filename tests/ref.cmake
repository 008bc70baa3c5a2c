# ref.cmake: the reference interpreter checked against numpy on fresh random
# inputs (tests/ref_numpy.py). Needs a python with numpy: configure with
# -DSINTER_PYTHON=/path/to/python (scripts/test does).
if(SINTER_PYTHON)
  add_test(NAME ref.numpy COMMAND ${SINTER_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/ref_numpy.py $<TARGET_FILE:sinter_cli>)
endif()

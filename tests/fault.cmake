# fault.cmake: the fault-injection sweep, in a -DSINTER_FAULT=ON build
# (scripts/test builds build-test/ with it).
if(SINTER_FAULT)
  add_test(NAME fault.sweep COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/run_fault.sh $<TARGET_FILE:sinter_cli>)
  set_tests_properties(fault.sweep PROPERTIES LABELS fault TIMEOUT 600)
endif()

# Installing sinter and consuming it (run_install.sh): pkg-config,
# find_package(sinter) with both libraries, and add_subdirectory.
set(SINTER_TEST_CFLAGS "")
if(SINTER_SANITIZE)
  set(SINTER_TEST_CFLAGS "-fsanitize=address,undefined")
elseif(SINTER_TSAN)
  set(SINTER_TEST_CFLAGS "-fsanitize=thread")
endif()
add_test(NAME install.consume COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/run_install.sh ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR} 1)
set_tests_properties(install.consume PROPERTIES ENVIRONMENT "SINTER_TEST_CFLAGS=${SINTER_TEST_CFLAGS}"
  PASS_REGULAR_EXPRESSION "install: all checks passed" TIMEOUT 900)

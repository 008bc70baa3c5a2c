# install.cmake: what `cmake --install` puts under the prefix: the header,
# libsinter.so (versioned) and libsinter.a, the sinter command, sinter.pc
# for pkg-config and a CMake package (find_package(sinter) gives
# sinter::sinter, the shared library, and sinter::sinter_static).
include(CMakePackageConfigHelpers)

# The installed libsinter.a is not the build tree's (whose internals the
# tests use): its objects are linked into one (ld -r) and every global but
# the sinter_ API made local, so an application's own onnx_load or
# ir_verify cannot clash with sinter's internals.
set(SINTER_PUBLIC_DIR ${CMAKE_CURRENT_BINARY_DIR}/public)
set(SINTER_PUBLIC_A ${SINTER_PUBLIC_DIR}/libsinter.a)
add_custom_command(OUTPUT ${SINTER_PUBLIC_A}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${SINTER_PUBLIC_DIR}
  COMMAND ${CMAKE_LINKER} -r -o ${SINTER_PUBLIC_DIR}/sinter.o "$<TARGET_OBJECTS:sinter_objects>"
  COMMAND ${CMAKE_OBJCOPY} --wildcard --keep-global-symbol=sinter_* ${SINTER_PUBLIC_DIR}/sinter.o
  COMMAND ${CMAKE_COMMAND} -E rm -f ${SINTER_PUBLIC_A}
  COMMAND ${CMAKE_AR} qc ${SINTER_PUBLIC_A} ${SINTER_PUBLIC_DIR}/sinter.o
  COMMAND ${CMAKE_RANLIB} ${SINTER_PUBLIC_A}
  DEPENDS sinter_objects "$<TARGET_OBJECTS:sinter_objects>"
  COMMAND_EXPAND_LISTS VERBATIM)
add_custom_target(sinter_public_static ALL DEPENDS ${SINTER_PUBLIC_A})

# sinter_dist: everything `cmake --install` takes from the build folder, so
# that a build of it alone (scripts/run's) can be installed. A target
# installed below joins it.
add_custom_target(sinter_dist)
add_dependencies(sinter_dist sinter_cli sinter_shared sinter_public_static)

install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/include/sinter.h ${CMAKE_CURRENT_SOURCE_DIR}/include/sinter_tools.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS sinter_shared EXPORT sinterTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${SINTER_PUBLIC_A} DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS sinter_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# shell completion, where bash-completion and zsh look for it
install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/cli/completion/sinter.bash
  DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME sinter)
install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/cli/completion/_sinter DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/site-functions)

set(SINTER_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/sinter)
install(EXPORT sinterTargets NAMESPACE sinter:: DESTINATION ${SINTER_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/sinterConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/sinterConfig.cmake INSTALL_DESTINATION ${SINTER_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/sinterConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/sinterConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/sinterConfigVersion.cmake
  DESTINATION ${SINTER_CMAKE_DIR})

# pkg-config: sinter.pc links the shared library, and `--static` adds what
# libsinter.a needs (Libs.private), for a link that picks the archive
# itself (-static, or -Wl,-Bstatic around it). pkg-config cannot make
# `--static` choose libsinter.a over libsinter.so on its own: both are
# -lsinter in one folder, `--static` only appends Libs.private to Libs, and
# the linker takes the shared library it meets first. sinter-static.pc
# names the archive itself and everything it needs: `pkg-config --libs
# sinter-static` is the static link, with or without --static.
set(SINTER_PC_LIBS_PRIVATE "-lxxhash -lm")
# the cpu device's libraries, by path (libLLVM-16.so is outside the default
# search path on Debian)
foreach(lib ${SINTER_CPU_LIBS})
  string(APPEND SINTER_PC_LIBS_PRIVATE " ${lib}")
endforeach()
if(CMAKE_DL_LIBS)
  string(APPEND SINTER_PC_LIBS_PRIVATE " -l${CMAKE_DL_LIBS}")
endif()
string(APPEND SINTER_PC_LIBS_PRIVATE " -pthread")
# the prefix relative to the .pc file, so `cmake --install --prefix` anywhere works
file(RELATIVE_PATH SINTER_PC_UP /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/sinter.pc.in ${CMAKE_CURRENT_BINARY_DIR}/sinter.pc @ONLY)
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/sinter-static.pc.in ${CMAKE_CURRENT_BINARY_DIR}/sinter-static.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/sinter.pc ${CMAKE_CURRENT_BINARY_DIR}/sinter-static.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

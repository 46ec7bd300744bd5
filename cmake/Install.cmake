# Installed package: libdtf.so, dtf.h, the Fortran module, `find_package(dtf)` (dtf::dtf, dtf::fortran),
# dtf.pc, and the tools (dtfrun, dtf-config).
include(CMakePackageConfigHelpers)

set(_targets dtf)
if(DTF_FORTRAN)
  list(APPEND _targets dtf_fortran)
endif()
install(TARGETS ${_targets} EXPORT dtfTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/dtf.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(DTF_FORTRAN)
  install(FILES ${PROJECT_BINARY_DIR}/mod/dtf.mod DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endif()

install(EXPORT dtfTargets NAMESPACE dtf:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dtf)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/dtfConfig.cmake.in
  ${PROJECT_BINARY_DIR}/dtfConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dtf)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/dtfConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/dtfConfig.cmake ${PROJECT_BINARY_DIR}/dtfConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dtf)

# dtf.pc is made at install time, with the prefix installed into (`cmake --install --prefix` may name
# another than the configured one): plain absolute paths, in its -L, -I and rpath.
install(CODE "
  set(DTF_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  set(CMAKE_INSTALL_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
  set(CMAKE_INSTALL_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
  set(PROJECT_DESCRIPTION \"${PROJECT_DESCRIPTION}\")
  set(PROJECT_VERSION \"${PROJECT_VERSION}\")
  configure_file(\"${PROJECT_SOURCE_DIR}/cmake/dtf.pc.in\" \"${PROJECT_BINARY_DIR}/dtf.pc\" @ONLY)")
install(FILES ${PROJECT_BINARY_DIR}/dtf.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

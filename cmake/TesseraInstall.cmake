# `cmake --install`: headers, the module libraries (static), libtessera.so when it is built, a CMake
# package (find_package(tessera COMPONENTS tet cells …), targets tessera::<module>, tessera::tessera
# for every format, tessera::shared for the shared library, and the optional features as
# components: hdf5 netcdf parquet png) and a pkg-config file for the shared library
# (docs/install.md).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TESSERA_MODULES core io codec image columnar tet tet_query zarr ragged cells interop)
set(_install_targets tessera_build_flags tessera_lib)
foreach(m ${TESSERA_MODULES})
  list(APPEND _install_targets tessera_${m})
endforeach()
if(TESSERA_SHARED_LIBRARY)
  list(APPEND _install_targets tessera_shared)
endif()

install(TARGETS ${_install_targets} EXPORT tesseraTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/tessera DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${CMAKE_BINARY_DIR}/generated/tessera/version.hpp ${CMAKE_BINARY_DIR}/generated/tessera/features.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tessera)

# The optional features this build has (TESSERA_WITH_*), for the package configuration (which finds
# only their libraries and offers them as components) and the pkg-config file.
set(TESSERA_ENABLED_FEATURES)
foreach(f ${TESSERA_FEATURES})
  if(TESSERA_WITH_${f})
    string(TOLOWER ${f} _f)
    list(APPEND TESSERA_ENABLED_FEATURES ${_f})
  endif()
endforeach()
list(JOIN TESSERA_ENABLED_FEATURES " " TESSERA_PC_FEATURES)

set(_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/tessera)
install(EXPORT tesseraTargets NAMESPACE tessera:: DESTINATION ${_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tesseraConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/tesseraConfig.cmake INSTALL_DESTINATION ${_cmake_dir})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/tesseraConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/tesseraConfig.cmake ${CMAKE_BINARY_DIR}/tesseraConfigVersion.cmake
        DESTINATION ${_cmake_dir})

if(TESSERA_SHARED_LIBRARY)
  # The prefix relative to the .pc file, so an installed tree can be moved (cmake --install --prefix).
  file(RELATIVE_PATH TESSERA_PC_TO_PREFIX "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
  string(REGEX REPLACE "/$" "" TESSERA_PC_TO_PREFIX "${TESSERA_PC_TO_PREFIX}")
  configure_file(${PROJECT_SOURCE_DIR}/cmake/tessera.pc.in ${CMAKE_BINARY_DIR}/tessera.pc @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/tessera.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endif()

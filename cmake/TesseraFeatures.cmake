# Optional components (docs/install.md, "Minimal builds"). Each TESSERA_WITH_<FEATURE> option is ON
# by default; OFF leaves its third-party library unsearched and the files that need it uncompiled,
# and builds instead one stand-in translation unit (`*_unavailable.cpp`) whose entry points throw
# tessera::FeatureUnavailable naming the option. With all four off, reading .tet files and
# deltacells matrices needs only the core libraries (zstd, ISA-L, oneTBB, …).
option(TESSERA_WITH_HDF5 "HDF5 inputs through libhdf5: tet convert, h5ad and 10x HDF5 cells inputs, ICESat-2 granules" ON)
option(TESSERA_WITH_NETCDF "NetCDF inputs of tet convert through libnetcdf" ON)
option(TESSERA_WITH_PARQUET "Parquet through libthrift and Snappy: the deltacells obs sidecar and var table, ragged build input" ON)
option(TESSERA_WITH_PNG "PNG pictures through libpng: quicklooks, tile charts, heatmaps" ON)
set(TESSERA_FEATURES HDF5 NETCDF PARQUET PNG)

include(cmake/TesseraSoname.cmake)
if(TESSERA_WITH_HDF5)
  find_package(HDF5 REQUIRED COMPONENTS C)
  tessera_library_file(_hdf5_file "^libhdf5[^/]*\\.so" ${HDF5_C_LIBRARIES})
  tessera_soname(TESSERA_HDF5_SONAME ${_hdf5_file})
endif()
if(TESSERA_WITH_NETCDF)
  pkg_check_modules(NETCDF REQUIRED IMPORTED_TARGET netcdf)
  tessera_library_file(_netcdf_file "^libnetcdf\\.so" ${NETCDF_LINK_LIBRARIES})
  tessera_soname(TESSERA_NETCDF_SONAME ${_netcdf_file})
endif()
if(TESSERA_WITH_PARQUET)
  pkg_check_modules(THRIFT REQUIRED IMPORTED_TARGET thrift)
  find_program(TESSERA_THRIFT thrift REQUIRED)
  find_package(Snappy CONFIG REQUIRED)
endif()
if(TESSERA_WITH_PNG)
  find_package(PNG REQUIRED)
endif()

# tessera_feature(<FEATURE> MODULE <m> STUB <file> SOURCES <files…> LINKS <targets…>
#                 [LOADED_ON_USE <definitions…>]): the files of src/<m>/ that need the feature's
# libraries, and the stand-in compiled instead when it is off. LOADED_ON_USE: the files are
# compiled against the libraries' headers but nothing links them; they load them at run time
# (include/tessera/core/loaded_library.hpp), told their sonames by the <definitions>.
function(tessera_feature feature)
  cmake_parse_arguments(F "" "MODULE;STUB" "SOURCES;LINKS;LOADED_ON_USE" ${ARGN})
  foreach(file ${F_STUB} ${F_SOURCES})
    if(NOT EXISTS ${PROJECT_SOURCE_DIR}/src/${F_MODULE}/${file})
      message(FATAL_ERROR "tessera_feature(${feature}): src/${F_MODULE}/${file} does not exist")
    endif()
  endforeach()
  set_property(GLOBAL APPEND PROPERTY TESSERA_FEATURES_OF_${F_MODULE} ${feature})
  foreach(field STUB SOURCES LINKS LOADED_ON_USE)
    set_property(GLOBAL PROPERTY TESSERA_FEATURE_${feature}_${field} ${F_${field}})
  endforeach()
endfunction()

tessera_feature(HDF5 MODULE interop STUB hdf5_unavailable.cpp
                SOURCES hdf5.cpp hdf5_api.cpp hdf5_chunk.cpp hdf5_file.cpp hdf5_handle.cpp LINKS hdf5::hdf5
                LOADED_ON_USE TESSERA_HDF5_SONAME="${TESSERA_HDF5_SONAME}")
tessera_feature(NETCDF MODULE interop STUB netcdf_unavailable.cpp SOURCES netcdf.cpp netcdf_api.cpp
                LINKS PkgConfig::NETCDF LOADED_ON_USE TESSERA_NETCDF_SONAME="${TESSERA_NETCDF_SONAME}")
# (rle_hybrid and parquet_common need no library and stay; zlib is a core dependency, linked here
# for GZIP pages.)
tessera_feature(PARQUET MODULE columnar STUB parquet_unavailable.cpp
                SOURCES parquet_footer.cpp parquet_pages.cpp parquet_writer.cpp page_compression.cpp
                LINKS PkgConfig::THRIFT Snappy::snappy ZLIB::ZLIB)
tessera_feature(PNG MODULE image STUB png_unavailable.cpp SOURCES png.cpp LINKS PNG::PNG)

# tessera_feature_enabled(<var> <FEATURE>…): whether every named feature is on (for targets outside
# the library that exist to exercise one, such as a fuzz target or a test suite).
function(tessera_feature_enabled var)
  set(_on TRUE)
  foreach(f ${ARGN})
    if(NOT TESSERA_WITH_${f})
      set(_on FALSE)
    endif()
  endforeach()
  set(${var} ${_on} PARENT_SCOPE)
endfunction()

# Called by tessera_module with the module's globbed sources (in `srcs_var`): takes out the files
# of the module's features and puts back the stand-ins of those that are off.
function(_tessera_feature_sources module srcs_var)
  set(_srcs ${${srcs_var}})
  get_property(_features GLOBAL PROPERTY TESSERA_FEATURES_OF_${module})
  foreach(f ${_features})
    get_property(_stub GLOBAL PROPERTY TESSERA_FEATURE_${f}_STUB)
    get_property(_files GLOBAL PROPERTY TESSERA_FEATURE_${f}_SOURCES)
    foreach(file ${_stub} ${_files})
      list(REMOVE_ITEM _srcs ${PROJECT_SOURCE_DIR}/src/${module}/${file})
    endforeach()
    if(NOT TESSERA_WITH_${f})
      list(APPEND _srcs ${PROJECT_SOURCE_DIR}/src/${module}/${_stub})
    endif()
  endforeach()
  set(${srcs_var} ${_srcs} PARENT_SCOPE)
endfunction()

# Called by tessera_module once its library exists: compiles the files of each feature that is on
# as the object library tessera_<module>_<feature> (with the module's dependencies and the
# feature's libraries), puts its objects into the module's archive and links the libraries to the
# module for linking only ($<LINK_ONLY:…> keeps their compile flags off the module's own files).
function(_tessera_feature_objects module deps)
  get_property(_features GLOBAL PROPERTY TESSERA_FEATURES_OF_${module})
  foreach(f ${_features})
    if(NOT TESSERA_WITH_${f})
      continue()
    endif()
    get_property(_files GLOBAL PROPERTY TESSERA_FEATURE_${f}_SOURCES)
    get_property(_links GLOBAL PROPERTY TESSERA_FEATURE_${f}_LINKS)
    get_property(_loaded GLOBAL PROPERTY TESSERA_FEATURE_${f}_LOADED_ON_USE)
    list(TRANSFORM _files PREPEND ${PROJECT_SOURCE_DIR}/src/${module}/)
    string(TOLOWER "tessera_${module}_${f}" _objects)
    add_library(${_objects} OBJECT ${_files})
    target_link_libraries(${_objects} PRIVATE ${deps} tessera_build_flags)
    target_sources(tessera_${module} PRIVATE $<TARGET_OBJECTS:${_objects}>)
    if(_loaded)
      tessera_compile_against(${_objects} ${_links})
      target_compile_definitions(${_objects} PRIVATE ${_loaded})
      continue()
    endif()
    target_link_libraries(${_objects} PRIVATE ${_links})
    foreach(l ${_links})
      target_link_libraries(tessera_${module} PRIVATE $<LINK_ONLY:${l}>)
    endforeach()
    # libtessera.so is built from object lists; it needs these beside the modules' own.
    set_property(GLOBAL APPEND PROPERTY TESSERA_FEATURE_OBJECT_LIBRARIES ${_objects})
  endforeach()
endfunction()

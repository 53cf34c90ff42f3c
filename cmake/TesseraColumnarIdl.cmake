# Code generated at build time for the columnar module (never committed): the Arrow IPC metadata
# tables from src/columnar/idl/*.fbs (flatc, header-only flatbuffers) and, with Parquet support
# (TESSERA_WITH_PARQUET), the Parquet footer and page-header structs from
# src/columnar/idl/parquet.thrift (thrift, Thrift compact protocol).
set(_idl ${PROJECT_SOURCE_DIR}/src/columnar/idl)
set(_gen ${CMAKE_BINARY_DIR}/generated/columnar)
file(MAKE_DIRECTORY ${_gen})
add_custom_command(
  OUTPUT ${_gen}/Schema_generated.h ${_gen}/Message_generated.h ${_gen}/File_generated.h
  COMMAND ${TESSERA_FLATC} --cpp --scoped-enums --no-warnings -o ${_gen}
          ${_idl}/Schema.fbs ${_idl}/Message.fbs ${_idl}/File.fbs
  DEPENDS ${_idl}/Schema.fbs ${_idl}/Message.fbs ${_idl}/File.fbs
  COMMENT "flatc: Arrow Schema/Message/File.fbs subset" VERBATIM)
target_sources(tessera_columnar PRIVATE ${_gen}/Schema_generated.h ${_gen}/Message_generated.h ${_gen}/File_generated.h)
target_include_directories(tessera_columnar SYSTEM PRIVATE ${_gen})
if(TARGET tessera_columnar_parquet)
  add_custom_command(
    OUTPUT ${_gen}/parquet_types.h ${_gen}/parquet_types.cpp
    COMMAND ${TESSERA_THRIFT} --gen cpp:no_skeleton -out ${_gen} ${_idl}/parquet.thrift
    DEPENDS ${_idl}/parquet.thrift
    COMMENT "thrift: parquet.thrift subset" VERBATIM)
  target_sources(tessera_columnar_parquet PRIVATE ${_gen}/parquet_types.cpp ${_gen}/parquet_types.h)
  # Generated code follows its generator's style, not ours.
  set_source_files_properties(${_gen}/parquet_types.cpp PROPERTIES COMPILE_OPTIONS -w SKIP_PRECOMPILE_HEADERS ON)
  target_include_directories(tessera_columnar_parquet SYSTEM PRIVATE ${_gen})
endif()

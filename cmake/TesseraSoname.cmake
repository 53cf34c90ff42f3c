# tessera_soname(<var> <library file>): the SONAME recorded in a shared library (e.g.
# "libhdf5_serial.so.103" for .../hdf5/serial/libhdf5.so). The libraries loaded on first use
# (include/tessera/core/loaded_library.hpp) are opened by this name at run time, exactly the
# library a link against <library file> would have recorded.
function(tessera_soname var file)
  if(NOT CMAKE_OBJDUMP)
    find_program(CMAKE_OBJDUMP NAMES objdump llvm-objdump REQUIRED)
  endif()
  get_filename_component(_real "${file}" REALPATH)
  execute_process(COMMAND ${CMAKE_OBJDUMP} -p "${_real}" OUTPUT_VARIABLE _dump RESULT_VARIABLE _rc ERROR_QUIET)
  string(REGEX MATCH "SONAME +([^ \t\r\n]+)" _match "${_dump}")
  if(NOT _rc EQUAL 0 OR NOT CMAKE_MATCH_1)
    message(FATAL_ERROR "tessera_soname: no SONAME found in ${file} (${_real})")
  endif()
  set(${var} "${CMAKE_MATCH_1}" PARENT_SCOPE)
endfunction()

# tessera_library_file(<var> <regex> <list…>): the first entry of a library list (as find modules
# return them) whose file name matches <regex>.
function(tessera_library_file var regex)
  foreach(entry ${ARGN})
    get_filename_component(_name "${entry}" NAME)
    if(_name MATCHES "${regex}")
      set(${var} "${entry}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  message(FATAL_ERROR "tessera_library_file: no library matching ${regex} in: ${ARGN}")
endfunction()

# tessera_compile_against(<target> <imported library targets…>): <target> compiles with the
# libraries' include directories and definitions but does not link them (they are loaded on
# first use).
function(tessera_compile_against target)
  foreach(l ${ARGN})
    target_include_directories(${target} SYSTEM PRIVATE $<TARGET_PROPERTY:${l},INTERFACE_INCLUDE_DIRECTORIES>)
    target_compile_definitions(${target} PRIVATE $<TARGET_PROPERTY:${l},INTERFACE_COMPILE_DEFINITIONS>)
  endforeach()
endfunction()

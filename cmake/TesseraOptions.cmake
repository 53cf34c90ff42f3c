# Compiler flags shared by every tessera target, carried by the `tessera_build_flags` interface.
add_library(tessera_build_flags INTERFACE)
target_compile_options(tessera_build_flags INTERFACE -Wall -Wextra)
# GCC 12 at -O3 reports -Wrestrict false positives inside libstdc++ string concatenation
# (GCC bug 105329); the warning has no true positives in this code base.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  target_compile_options(tessera_build_flags INTERFACE -Wno-restrict)
endif()
if(TESSERA_WERROR)
  target_compile_options(tessera_build_flags INTERFACE -Werror)
endif()
# Bit-exact agreement with numpy needs IEEE evaluation without fused multiply-add contraction.
target_compile_options(tessera_build_flags INTERFACE -ffp-contract=off)

if(TESSERA_SANITIZE)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "TESSERA_SANITIZE needs clang (libFuzzer's fuzzer-no-link)")
  endif()
  # Applied globally so every object (including the fuzz entry points) shares the instrumentation.
  add_compile_options(-fsanitize=address,undefined,fuzzer-no-link -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

# Optimisation of the code around the library, which runs no hot loops of its own: tests and the
# CLI build at -O1 in Release (about half the compile time of -O3). The sanitizer build compiles
# the CLI at -O0 (instrumented: it is product code) and the tests at -O0 *without*
# instrumentation: the sanitizers are there to check the library, which the tests call, and an
# uninstrumented -O0 test compiles in about a fifth of the time of an instrumented -O1 one. The
# corruption sweeps, which copy and mutate every byte in test code, build at -O1
# (tests/CMakeLists.txt); TESSERA_SANITIZED tells test code it runs against a sanitized library.
if(TESSERA_SANITIZE)
  set(TESSERA_TEST_OPT -O0 -fno-sanitize=all)
  set(TESSERA_CLI_OPT -O0)
else()
  set(TESSERA_TEST_OPT $<$<CONFIG:Release>:-O1>)
  set(TESSERA_CLI_OPT $<$<CONFIG:Release>:-O1>)
endif()

# lld links the large (sanitized) test and fuzz binaries about five times faster than GNU ld.
find_program(TESSERA_LLD ld.lld)
if(TESSERA_LLD)
  add_link_options(-fuse-ld=lld)
endif()

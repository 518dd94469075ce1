# SPDX-License-Identifier: MIT
# Project-wide options: warnings, sanitizers, ccache. Targets link dasp_warnings and
# dasp_options PRIVATE instead of editing CMAKE_CXX_FLAGS.

option(DASP_WARNINGS_AS_ERRORS "Treat warnings as errors" OFF)
set(DASP_SANITIZER "" CACHE STRING "Sanitizers: address;undefined, or thread (empty = none)")

find_program(CCACHE_PROGRAM ccache)
if(CCACHE_PROGRAM)
  # The sloppiness lets ccache cache the translation units that use a precompiled header
  # (cmake/DaspPch.cmake); without it ccache compiles them uncached.
  set(CMAKE_CXX_COMPILER_LAUNCHER ${CMAKE_COMMAND} -E env
      CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime ${CCACHE_PROGRAM})
endif()

# GNU gold (part of binutils) links our binaries about seven times faster than ld.bfd: with
# bfd the links were a fifth of a cold build's CPU time, most of it the ~50 test
# executables. Empty: the compiler's default linker.
set(DASP_LINKER "gold" CACHE STRING "The linker for -fuse-ld= (gold, bfd, lld, mold; empty = the compiler's default)")
if(DASP_LINKER)
  include(CheckLinkerFlag)
  check_linker_flag(CXX "-fuse-ld=${DASP_LINKER}" DASP_LINKER_${DASP_LINKER}_WORKS)
  if(DASP_LINKER_${DASP_LINKER}_WORKS)
    add_link_options(-fuse-ld=${DASP_LINKER})
  else()
    message(STATUS "-fuse-ld=${DASP_LINKER} does not work here: linking with the compiler's default")
  endif()
endif()

add_library(dasp_warnings INTERFACE)
target_compile_options(dasp_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align -Wunused
  -Woverloaded-virtual -Wformat=2)
if(DASP_WARNINGS_AS_ERRORS)
  target_compile_options(dasp_warnings INTERFACE -Werror)
endif()

add_library(dasp_options INTERFACE)
if(DASP_SANITIZER)
  string(REPLACE ";" "," _dasp_san "${DASP_SANITIZER}")
  target_compile_options(dasp_options INTERFACE -fsanitize=${_dasp_san} -fno-omit-frame-pointer)
  # GCC 12 reports -Wmaybe-uninitialized inside libstdc++ (std::function in std::regex) when
  # it instruments with ASan: a known false positive, not an error in our code.
  target_compile_options(dasp_warnings INTERFACE -Wno-error=maybe-uninitialized)
  target_link_options(dasp_options INTERFACE -fsanitize=${_dasp_san})
endif()

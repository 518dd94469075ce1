# SPDX-License-Identifier: MIT
# dasp_add_test(NAME core.run_store SOURCES tst_run_store.cpp LIBS dasp_core
#               [LABELS core] [TIMEOUT 60] [PLAIN] [NODE_PROCESSES [NODE_SLOTS n]]
#               [PARTS part=function,function ...])
# One Qt Test executable per unit, registered with CTest, headless, with a timeout. A Qt
# Test unit reuses the precompiled header of its kind (dasp_add_test_pch): that of the
# first of dasp_ui, dasp_charts and dasp_net (or dasp_cli, which links it) in LIBS that
# has one, else dasp_core's.
# LABELS takes a list ("ml;gpu"). PLAIN: a plain C++ program instead (no Qt), which exits
# 0 when its checks pass, 1 when one fails and 77 when all were skipped (CTest shows
# "Skipped"). Without Qt 6 Test (the Qt-free build, DASP_BUILD_GUI=OFF) the Qt Test units
# are left out and dasp_add_test returns without defining anything.
# NODE_PROCESSES: the unit starts real node processes (`dasp run`, servers, workers), whose
# checks of timing want the machine not too busy: at most three such tests run at once
# (the resource node_processes of tests/resources.json, which ./test.sh gives ctest);
# NODE_SLOTS n: the unit takes n of the three, for a schedule that needs its restarts
# quick (a restart is mostly a process start, which is CPU-bound).
# PARTS: CTest runs the unit as several tests, NAME.part for each part (its test
# functions), then NAME.others for every function no part names, so that a new function
# always runs (tests/support/run_test_part.sh). TIMEOUT is each part's.
function(dasp_add_test)
  cmake_parse_arguments(T "PLAIN;NODE_PROCESSES" "NAME;TIMEOUT;NODE_SLOTS" "SOURCES;LIBS;LABELS;PARTS" ${ARGN})
  if(NOT T_PLAIN AND NOT TARGET Qt6::Test)
    return()
  endif()
  string(REPLACE "." "_" _target "tst_${T_NAME}")
  add_executable(${_target} ${T_SOURCES})
  set_target_properties(${_target} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
  if(T_PLAIN)
    target_link_libraries(${_target} PRIVATE ${T_LIBS} dasp_warnings dasp_options)
  else()
    set_target_properties(${_target} PROPERTIES AUTOMOC ON)
    target_link_libraries(${_target} PRIVATE ${T_LIBS} Qt6::Test dasp_warnings dasp_options)
    set(_pch dasp_pch_tests_dasp_core)
    foreach(_lib dasp_net dasp_cli dasp_charts dasp_ui)
      if(_lib IN_LIST T_LIBS)
        set(_pch dasp_pch_tests_${_lib})
      endif()
    endforeach()
    if(_pch STREQUAL dasp_pch_tests_dasp_cli)
      set(_pch dasp_pch_tests_dasp_net)  # the CLI links the net layer: its kind
    endif()
    if(TARGET ${_pch})
      dasp_reuse_precompiled(${_target} ${_pch})
      # A unit includes its own moc file, so AUTOMOC's compilation unit is empty: it needs
      # no precompiled header.
      set_source_files_properties(${CMAKE_CURRENT_BINARY_DIR}/${_target}_autogen/mocs_compilation.cpp
        PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
    endif()
  endif()
  dasp_test_definitions(${_target})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 60)
  endif()
  if(DASP_SANITIZER)
    # Every node process is about 2.5 times slower under a sanitizer (kProcessTimeScale in
    # tests/support/processes.h), and so is the unit that waits for them.
    math(EXPR T_TIMEOUT "${T_TIMEOUT} * 5 / 2")
  endif()
  set(_tests ${T_NAME})
  if(T_PARTS)
    set(_tests "")
    set(_named "")
    set(_runner ${PROJECT_SOURCE_DIR}/tests/support/run_test_part.sh)
    foreach(_part ${T_PARTS})
      string(REGEX MATCH "^([a-z_]+)=(.+)$" _ok "${_part}")
      if(NOT _ok)
        message(FATAL_ERROR "dasp_add_test(${T_NAME}): a part is name=function,function..., not '${_part}'")
      endif()
      string(REPLACE "," ";" _functions "${CMAKE_MATCH_2}")
      add_test(NAME ${T_NAME}.${CMAKE_MATCH_1} COMMAND ${_runner} $<TARGET_FILE:${_target}> ${_functions})
      list(APPEND _tests ${T_NAME}.${CMAKE_MATCH_1})
      list(APPEND _named ${_functions})
    endforeach()
    add_test(NAME ${T_NAME}.others COMMAND ${_runner} $<TARGET_FILE:${_target}> --rest ${_named})
    list(APPEND _tests ${T_NAME}.others)
  else()
    add_test(NAME ${T_NAME} COMMAND ${_target})
  endif()
  set_tests_properties(${_tests} PROPERTIES
    TIMEOUT ${T_TIMEOUT}
    LABELS "${T_LABELS}"
    ENVIRONMENT "QT_QPA_PLATFORM=offscreen;OMP_WAIT_POLICY=PASSIVE;OMP_NUM_THREADS=1;DASP_DB=${PROJECT_BINARY_DIR}/tests/unused-default.sqlite")
  if(T_PLAIN)
    set_tests_properties(${_tests} PROPERTIES SKIP_RETURN_CODE 77)
  endif()
  if(T_NODE_PROCESSES)
    if(NOT T_NODE_SLOTS)
      set(T_NODE_SLOTS 1)
    endif()
    if(DASP_SANITIZER)
      # Every node process is several times slower under a sanitizer, and a drill's
      # recovery must still fit in its run: one such test at a time.
      set(T_NODE_SLOTS 3)
    endif()
    set_tests_properties(${_tests} PROPERTIES RESOURCE_GROUPS "node_processes:${T_NODE_SLOTS}")
  endif()
endfunction()

# The unit runs this build's `dasp` (as node processes, or `dasp run`): build it first. Not
# under ThreadSanitizer, whose units run the release build's `dasp` as their nodes
# (tools/sanitizer-check.sh --thread: LibTorch is not built with TSan), so that job does not
# compile the command line.
function(dasp_test_runs_dasp target)
  if(NOT DASP_SANITIZER STREQUAL "thread")
    add_dependencies(${target} dasp)
  endif()
endfunction()

# What every test executable (and the precompiled headers' hosts) is compiled with. The
# tests' own code is compiled -O1: what they test is the libraries, compiled as the build
# type says, and a test file's time went mostly to optimizing its QtTest macros.
function(dasp_test_definitions target)
  target_compile_definitions(${target} PRIVATE
    DASP_SOURCE_DIR="${PROJECT_SOURCE_DIR}" DASP_BINARY_DIR="${PROJECT_BINARY_DIR}")
  if(CMAKE_BUILD_TYPE STREQUAL "Release")
    target_compile_options(${target} PRIVATE -O1)
  endif()
endfunction()

# dasp_add_test_pch(LIB HEADERS...): dasp_pch_tests_LIB, an executable that only compiles
# the precompiled header of the Qt Test units of LIB's kind (dasp_add_test). It links LIB,
# as they do, so its compile definitions are theirs, which GCC requires of a precompiled
# header (gRPC adds _REENTRANT, the GUI's modules their QT_*_LIB).
function(dasp_add_test_pch lib)
  set(name dasp_pch_tests_${lib})
  add_executable(${name} ${PROJECT_SOURCE_DIR}/tests/support/pch_host.cpp)
  set_target_properties(${name} PROPERTIES AUTOMOC OFF RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
  target_link_libraries(${name} PRIVATE ${lib} Qt6::Test dasp_warnings dasp_options)
  dasp_test_definitions(${name})
  dasp_precompile(${name} ${ARGN})
endfunction()

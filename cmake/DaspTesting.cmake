# SPDX-License-Identifier: MIT
# dasp_add_test(NAME core.run_store SOURCES tst_run_store.cpp LIBS dasp_core
#               [LABELS core] [TIMEOUT 60] [GUI] [PLAIN])
# One Qt Test executable per unit, registered with CTest, headless, with a timeout.
# LABELS takes a list ("ml;gpu"). PLAIN: a plain C++ program instead (no Qt), which exits
# 0 when its checks pass, 1 when one fails and 77 when all were skipped (CTest shows
# "Skipped"). Without Qt 6 Test (the Qt-free build, DASP_BUILD_GUI=OFF) the Qt Test units
# are left out and dasp_add_test returns without defining anything.
function(dasp_add_test)
  cmake_parse_arguments(T "GUI;PLAIN" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
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
  endif()
  target_compile_definitions(${_target} PRIVATE
    DASP_SOURCE_DIR="${PROJECT_SOURCE_DIR}" DASP_BINARY_DIR="${PROJECT_BINARY_DIR}")
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 60)
  endif()
  add_test(NAME ${T_NAME} COMMAND ${_target})
  set_tests_properties(${T_NAME} PROPERTIES
    TIMEOUT ${T_TIMEOUT}
    LABELS "${T_LABELS}"
    ENVIRONMENT "QT_QPA_PLATFORM=offscreen;OMP_WAIT_POLICY=PASSIVE;OMP_NUM_THREADS=1;DASP_DB=${PROJECT_BINARY_DIR}/tests/unused-default.sqlite")
  if(T_PLAIN)
    set_tests_properties(${T_NAME} PROPERTIES SKIP_RETURN_CODE 77)
  endif()
endfunction()

# SPDX-License-Identifier: MIT
# Precompiled headers: where a fresh build's time goes (measured with .ninja_log, README
# "Build and test time"). Parsing the third-party headers — QtTest, Qt Widgets and Charts,
# gRPC and the generated Protobuf code — was most of every translation unit's time, so each
# target that includes them compiles them once. Only headers that do not change with our
# own code go in (the standard library, Qt, gRPC, Protobuf, CLI11, and the generated
# messages of our .proto files), so editing a source file rebuilds what it did before.
#
# dasp_precompile(TARGET HEADERS...)       the target's own precompiled header
# dasp_reuse_precompiled(TARGET FROM)      one precompiled header for many executables
#                                          (the tests): FROM must have the same compile
#                                          definitions and flags, or GCC ignores it
#                                          (-Winvalid-pch says so) and compiles as before.
option(DASP_PCH "Precompile the third-party headers of each target (build time)" ON)

# The standard headers most of our files include.
set(DASP_PCH_STD
  <algorithm> <atomic> <chrono> <cmath> <cstdint> <cstring> <functional> <limits> <map>
  <memory> <mutex> <optional> <sstream> <string> <thread> <utility> <vector>)

function(dasp_precompile target)
  if(DASP_PCH)
    target_precompile_headers(${target} PRIVATE ${ARGN})
  endif()
endfunction()

function(dasp_reuse_precompiled target from)
  if(DASP_PCH)
    target_precompile_headers(${target} REUSE_FROM ${from})
  endif()
endfunction()

# SPDX-License-Identifier: MIT
# LibTorch for dasp_ml (the only target that uses it). Sets TORCH_LIBRARIES,
# TORCH_INCLUDE_DIRS, DASP_TORCH_VERSION and DASP_WITH_CUDA (ON when the LibTorch found has
# CUDA), and stops on a C++ ABI mismatch.
#
# Which LibTorch:
#   default                     Debian's CPU-only libtorch-dev (1.13)
#   -DTorch_DIR=DIR or          any LibTorch's CMake package, e.g. a PyTorch installation's
#   -DCMAKE_PREFIX_PATH=DIR     (python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
#                               or the cxx11-ABI LibTorch zip. A CUDA LibTorch's own CMake
#                               files require the CUDA toolkit (nvcc, headers) to be installed.
#   -DDASP_TORCH_ROOT=DIR       a LibTorch tree (lib/, include/) used WITHOUT its CMake files,
#                               e.g. a PyTorch wheel's torch/ directory on a GPU machine that has
#                               the driver but no CUDA toolkit: our code needs no CUDA headers.
#   -DDASP_REQUIRE_CUDA=ON      stop unless the LibTorch found has CUDA (tools/gpu-check.sh).

set(DASP_TORCH_ROOT "" CACHE PATH "LibTorch tree (lib/, include/) to use without its CMake files")
option(DASP_REQUIRE_CUDA "Stop unless the LibTorch found has CUDA" OFF)

set(DASP_WITH_CUDA OFF)
if(DASP_TORCH_ROOT)
  # A LibTorch tree without CMake: its shared libraries and include directories.
  set(_dasp_torch_lib "${DASP_TORCH_ROOT}/lib")
  foreach(_name torch torch_cpu c10)
    find_library(DASP_TORCH_${_name}_LIBRARY ${_name} PATHS "${_dasp_torch_lib}" NO_DEFAULT_PATH)
    if(NOT DASP_TORCH_${_name}_LIBRARY)
      message(FATAL_ERROR "DASP_TORCH_ROOT=${DASP_TORCH_ROOT}: no lib${_name}.so in ${_dasp_torch_lib}")
    endif()
  endforeach()
  set(_dasp_torch_libs ${DASP_TORCH_torch_LIBRARY} ${DASP_TORCH_torch_cpu_LIBRARY} ${DASP_TORCH_c10_LIBRARY})
  find_library(DASP_TORCH_torch_cuda_LIBRARY torch_cuda PATHS "${_dasp_torch_lib}" NO_DEFAULT_PATH)
  find_library(DASP_TORCH_c10_cuda_LIBRARY c10_cuda PATHS "${_dasp_torch_lib}" NO_DEFAULT_PATH)
  if(DASP_TORCH_torch_cuda_LIBRARY AND DASP_TORCH_c10_cuda_LIBRARY)
    set(DASP_WITH_CUDA ON)
    # Nothing of ours calls into libtorch_cuda.so, but it must be loaded: it registers the
    # CUDA backend. A linker that defaults to --as-needed (Ubuntu's) would drop it and
    # torch::cuda::is_available() would say false; LibTorch's own CMake targets wrap it the
    # same way.
    list(APPEND _dasp_torch_libs "-Wl,--push-state,--no-as-needed" ${DASP_TORCH_torch_cuda_LIBRARY}
         ${DASP_TORCH_c10_cuda_LIBRARY} "-Wl,--pop-state")
  endif()
  set(TORCH_INCLUDE_DIRS "${DASP_TORCH_ROOT}/include" "${DASP_TORCH_ROOT}/include/torch/csrc/api/include")
  set(_dasp_version_h "${DASP_TORCH_ROOT}/include/torch/csrc/api/include/torch/version.h")
  if(NOT EXISTS "${_dasp_version_h}")
    message(FATAL_ERROR "DASP_TORCH_ROOT=${DASP_TORCH_ROOT}: no include/torch/csrc/api/include/torch/version.h")
  endif()
  add_library(dasp_torch INTERFACE IMPORTED)
  set_target_properties(dasp_torch PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${TORCH_INCLUDE_DIRS}"
    INTERFACE_LINK_LIBRARIES "${_dasp_torch_libs}")
  # A wheel's libtorch_cuda.so finds cuDNN, cuBLAS, ... in the nvidia/*/lib folders beside
  # it through its $ORIGIN run path; tell the linker where they are too, and let it leave
  # the libraries' own undefined symbols to the loader (which follows those run paths).
  file(GLOB _dasp_nvidia_libs LIST_DIRECTORIES true "${DASP_TORCH_ROOT}/../nvidia/*/lib")
  foreach(_dir ${_dasp_torch_lib} ${_dasp_nvidia_libs})
    set_property(TARGET dasp_torch APPEND PROPERTY INTERFACE_LINK_OPTIONS "LINKER:-rpath-link,${_dir}")
  endforeach()
  set_property(TARGET dasp_torch APPEND PROPERTY INTERFACE_LINK_OPTIONS "LINKER:--allow-shlib-undefined")
  set(TORCH_LIBRARIES dasp_torch)
  file(STRINGS "${_dasp_version_h}" _dasp_torch_version_line
       REGEX "^#define TORCH_VERSION_(MAJOR|MINOR|PATCH) ")
  string(REGEX REPLACE ".*MAJOR ([0-9]+).*MINOR ([0-9]+).*PATCH ([0-9]+).*" "\\1.\\2.\\3"
         DASP_TORCH_VERSION "${_dasp_torch_version_line}")
  # The C++ ABI, from the library's symbols: std::string in a signature mangles as
  # std::__cxx11::basic_string under the C++11 ABI.
  execute_process(COMMAND nm -D --defined-only "${DASP_TORCH_c10_LIBRARY}"
                  OUTPUT_VARIABLE _dasp_c10_symbols ERROR_QUIET)
  if(_dasp_c10_symbols MATCHES "__cxx11")
    set(_dasp_torch_abi 1)
  elseif(_dasp_c10_symbols)
    set(_dasp_torch_abi 0)
  else()
    set(_dasp_torch_abi unknown)
  endif()
  set(_dasp_torch_where "${DASP_TORCH_ROOT}")
else()
  find_package(Torch REQUIRED)
  # A CUDA LibTorch defines its CUDA library targets (LibTorch 1.x and 2.x alike).
  if(TARGET torch_cuda OR TARGET c10_cuda)
    set(DASP_WITH_CUDA ON)
  endif()
  set(DASP_TORCH_VERSION "${Torch_VERSION}")
  if(TORCH_CXX_FLAGS MATCHES "_GLIBCXX_USE_CXX11_ABI=([01])")
    set(_dasp_torch_abi ${CMAKE_MATCH_1})
  else()
    set(_dasp_torch_abi unknown)
  endif()
  set(_dasp_torch_where "${Torch_DIR}")
endif()

# gRPC, Protobuf and everything else here come from Debian and use the C++11 ABI of
# libstdc++ (std::string = std::__cxx11::basic_string). A LibTorch built with the old ABI
# (_GLIBCXX_USE_CXX11_ABI=0: PyTorch wheels before 2.7, the "pre-cxx11 ABI" LibTorch zips)
# cannot be linked into the same program.
if(_dasp_torch_abi STREQUAL "0")
  message(FATAL_ERROR
    "LibTorch at ${_dasp_torch_where} was built with the old C++ ABI "
    "(_GLIBCXX_USE_CXX11_ABI=0), but Debian's gRPC and Protobuf use the C++11 ABI "
    "(_GLIBCXX_USE_CXX11_ABI=1); the two cannot be linked into one program. Use a LibTorch "
    "built with the C++11 ABI: PyTorch >= 2.7 wheels (check: python3 -c 'import torch; "
    "print(torch.compiled_with_cxx11_abi())' prints True), or the "
    "libtorch-cxx11-abi-shared-with-deps-*.zip LibTorch from pytorch.org. See README, GPUs.")
endif()

if(DASP_REQUIRE_CUDA AND NOT DASP_WITH_CUDA)
  message(FATAL_ERROR
    "DASP_REQUIRE_CUDA: LibTorch ${DASP_TORCH_VERSION} at ${_dasp_torch_where} has no CUDA "
    "(no torch_cuda library). Point Torch_DIR / CMAKE_PREFIX_PATH or DASP_TORCH_ROOT at a CUDA "
    "LibTorch; see README, GPUs.")
endif()

if(DASP_WITH_CUDA)
  set(_dasp_cuda_text "with CUDA")
else()
  set(_dasp_cuda_text "CPU only")
endif()
message(STATUS "LibTorch ${DASP_TORCH_VERSION} (${_dasp_cuda_text}, _GLIBCXX_USE_CXX11_ABI=${_dasp_torch_abi}) at ${_dasp_torch_where}")

# A PyTorch wheel's libtorch.so carries its own copy of parts of libstdc++ (std::filesystem,
# from the manylinux toolchain's static libstdc++_nonshared.a) and exports it. A program
# linked with libtorch before libstdc++ binds its own calls to that copy: on the first GPU
# host the runner's std::filesystem::remove_all jumped to address 0. So libstdc++ comes
# first on the link line (the order is harmless with Debian's LibTorch).
set(TORCH_LIBRARIES "-Wl,--push-state,--no-as-needed" stdc++ "-Wl,--pop-state" ${TORCH_LIBRARIES})

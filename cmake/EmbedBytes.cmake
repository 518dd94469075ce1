# SPDX-License-Identifier: MIT
# Writes the bytes of file IN as a C++ array into OUT:
#   namespace dasp::generated { const unsigned char NAME[]; const unsigned long NAME_size; } (external linkage)
# usage: cmake -DIN=file -DOUT=file.cpp -DNAME=symbol -P EmbedBytes.cmake
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" length)
math(EXPR size "${length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
# 16 bytes a line keeps the file readable (CMake's regular expressions have no {n}).
string(REPEAT "0x[0-9a-f][0-9a-f]," 16 line)
string(REGEX REPLACE "(${line})" "\\1\n" bytes "${bytes}")
file(WRITE "${OUT}"
  "// Generated from ${IN} by cmake/EmbedBytes.cmake at build time: do not edit.\n"
  "namespace dasp::generated {\n"
  "extern const unsigned char ${NAME}[];\n"
  "extern const unsigned long ${NAME}_size;\n"
  "const unsigned char ${NAME}[] = {\n${bytes}\n};\n"
  "const unsigned long ${NAME}_size = ${size};\n"
  "}  // namespace dasp::generated\n")

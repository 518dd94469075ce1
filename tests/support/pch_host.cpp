// SPDX-License-Identifier: MIT
// The host of a precompiled header the Qt Test units share (cmake/DaspTesting.cmake,
// dasp_add_test_pch): it compiles the header; this program does nothing.
int main() { return 0; }

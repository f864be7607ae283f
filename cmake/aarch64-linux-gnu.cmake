# Cross-compiling for ARM64 Linux on an x86-64 Debian host with clang (scripts/test_arm64.sh):
# Debian's aarch64 GNU toolchain gives the C++ library and the C runtime, the arm64 multiarch
# packages (dpkg --add-architecture arm64) the libraries ferrum links, and qemu-aarch64 runs the
# test binaries (CTest's and GoogleTest discovery's emulator).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(FERRUM_CROSS_CC clang-16 CACHE STRING "C compiler of the cross build")
set(FERRUM_CROSS_CXX clang++-16 CACHE STRING "C++ compiler of the cross build")
set(CMAKE_C_COMPILER ${FERRUM_CROSS_CC})
set(CMAKE_CXX_COMPILER ${FERRUM_CROSS_CXX})
set(CMAKE_C_COMPILER_TARGET aarch64-linux-gnu)
set(CMAKE_CXX_COMPILER_TARGET aarch64-linux-gnu)
# Headers are shared between architectures (/usr/include); libraries come from the arm64 multiarch
# directories only.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
# Not -L /usr/aarch64-linux-gnu: with the cross libc there a dynamically linked program hangs in its
# first thread under qemu; the arm64 multiarch libc (/lib/ld-linux-aarch64.so.1) works.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)

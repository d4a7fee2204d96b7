# cmake/aarch64-linux-gnu.cmake - cross-compiles uepoll for 64-bit Arm Linux
# with Debian's cross toolchain (package g++-aarch64-linux-gnu; its target
# libraries live in /usr/aarch64-linux-gnu).  scripts/test.sh's aarch64
# stage uses it:
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
# When qemu-user is installed (qemu-aarch64), it is the crosscompiling
# emulator: ctest, and gtest's test discovery, run the aarch64 binaries
# through it.  GoogleTest must be an aarch64 build too (the stage builds
# Debian's /usr/src/googletest with this file and passes -DGTest_DIR=...).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(UEPOLL_AARCH64_SYSROOT /usr/aarch64-linux-gnu)

find_program(UEPOLL_AARCH64_GCC aarch64-linux-gnu-gcc REQUIRED)
find_program(UEPOLL_AARCH64_GXX aarch64-linux-gnu-g++ REQUIRED)
set(CMAKE_C_COMPILER ${UEPOLL_AARCH64_GCC})
set(CMAKE_CXX_COMPILER ${UEPOLL_AARCH64_GXX})

# Libraries, headers and packages from the target's tree only; programs
# (cmake's helpers, qemu) from the host.
if(NOT UEPOLL_AARCH64_SYSROOT IN_LIST CMAKE_FIND_ROOT_PATH)
  list(APPEND CMAKE_FIND_ROOT_PATH ${UEPOLL_AARCH64_SYSROOT})
endif()
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

find_program(UEPOLL_QEMU_AARCH64 NAMES qemu-aarch64 qemu-aarch64-static)
if(UEPOLL_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${UEPOLL_QEMU_AARCH64} -L ${UEPOLL_AARCH64_SYSROOT})
endif()

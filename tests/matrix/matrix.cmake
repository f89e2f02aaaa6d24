# The version matrix (issue "Go as people deploy it"): the end-to-end tests of the pinned Go 1.19
# fixtures run again, unchanged, on the same fixtures built by each newer toolchain, plus the newgo
# fixture of what those toolchains brought. Each toolchain is one ctest fixture: its setup test
# (tests/matrix/build.sh) fetches the toolchain once into ~/.cache/weave (WEAVE_CACHE) and builds its
# fixtures into build/fixtures/goVERSION; the tests find them through WEAVE_MATRIX_FIXTURES
# (tests/e2e/harness.cpp). A toolchain that cannot be fetched skips its rows (exit 77) with the reason.
#
# Adding a program to every toolchain's row: build it in tests/matrix/build.sh, and add its test
# executable (linked with tests/e2e/harness.cpp, finding its binary with e2e::fixture) to
# WEAVE_MATRIX_TESTS below.
set(WEAVE_MATRIX_TOOLCHAINS 1.21.13 1.22.12 1.23.12 1.24.13 1.25.14 1.26.11 CACHE STRING
    "Go toolchains of the version matrix (latest patch of each minor version), fetched via GOTOOLCHAIN")
# The newest toolchain also builds cmd/compile for test_abi_crosscheck (about a minute, once).
set(WEAVE_MATRIX_COMPILE_TOOLCHAIN 1.26.11 CACHE STRING "Toolchain whose cmd/compile the ABI cross-check reads")

add_executable(e2e_test_newgo ${CMAKE_CURRENT_SOURCE_DIR}/matrix/test_newgo.cpp)
target_link_libraries(e2e_test_newgo PRIVATE e2e_harness doctest_main nlohmann_json::nlohmann_json fmt::fmt)
target_include_directories(e2e_test_newgo PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/e2e)
target_compile_definitions(e2e_test_newgo PRIVATE
  WEAVE_SOURCE_DIR="${CMAKE_SOURCE_DIR}" WEAVE_FIXTURE_DIR="${FIXTURE_DIR}"
  WEAVE_BINARY_DIR="${CMAKE_BINARY_DIR}" WEAVE_GO="${GO_EXECUTABLE}")
add_dependencies(e2e_test_newgo weave weave-tracer)

set(WEAVE_MATRIX_TESTS e2e_test_trace e2e_test_types e2e_test_returns e2e_test_latency e2e_test_stacks
    e2e_test_cgo e2e_test_stripped e2e_test_newgo e2e_test_zerosize e2e_test_generics e2e_test_inlined
    e2e_test_maps e2e_test_initinline e2e_test_when_return e2e_test_calls)
add_custom_target(matrix DEPENDS weave weave-tracer ${WEAVE_MATRIX_TESTS} test_abi_crosscheck e2e_test_arm64_vm)
# Type assertions (x.(T)): DW_AT_go_runtime_type, the itab's layout and the descriptors' placement per toolchain.
list(APPEND WEAVE_MATRIX_TESTS e2e_test_assert e2e_test_direct_iface)
add_dependencies(matrix e2e_test_assert e2e_test_direct_iface)

# A toolchain before Go 1.21 (no g.parentGoid) for goroutine ancestry alone: test_calls (and
# test_arm64_vm's spawn case, in qemu) on the spawn fixtures it builds, whose parents come from weave's probe on runtime.newproc1.
set(WEAVE_MATRIX_ANCESTRY_TOOLCHAIN 1.20.14 CACHE STRING "A Go before 1.21 whose spawn fixtures test_calls traces")
if(WEAVE_MATRIX_ANCESTRY_TOOLCHAIN)
  set(version ${WEAVE_MATRIX_ANCESTRY_TOOLCHAIN})
  set(dir ${FIXTURE_DIR}/go${version})
  add_test(NAME "matrix go${version}: fetch the toolchain, build the spawn fixtures"
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/matrix/build.sh ${version} ${dir} --spawn-only)
  set_tests_properties("matrix go${version}: fetch the toolchain, build the spawn fixtures" PROPERTIES
    FIXTURES_SETUP matrix_go${version} SKIP_RETURN_CODE 77 TIMEOUT 1200 RESOURCE_LOCK weave_matrix_build)
  add_test(NAME "matrix go${version}: e2e_test_calls" COMMAND e2e_test_calls)
  set_tests_properties("matrix go${version}: e2e_test_calls" PROPERTIES
    ENVIRONMENT "WEAVE_MATRIX_FIXTURES=${dir};GOTOOLCHAIN=local"
    FIXTURES_REQUIRED matrix_go${version} SKIP_RETURN_CODE 77 TIMEOUT 600)
  # And on arm64 in qemu, where the creation probe sits on runtime.newproc.func1's BLs.
  add_test(NAME "matrix go${version}: e2e_test_arm64_vm" COMMAND e2e_test_arm64_vm "--test-case=*(spawn)*")
  set_tests_properties("matrix go${version}: e2e_test_arm64_vm" PROPERTIES
    ENVIRONMENT "WEAVE_MATRIX_FIXTURES=${dir};GOTOOLCHAIN=local"
    FIXTURES_REQUIRED matrix_go${version} SKIP_RETURN_CODE 77 TIMEOUT 600)
endif()

foreach(version IN LISTS WEAVE_MATRIX_TOOLCHAINS)
  set(dir ${FIXTURE_DIR}/go${version})
  set(compile_flag)
  if(version STREQUAL WEAVE_MATRIX_COMPILE_TOOLCHAIN)
    set(compile_flag --compile)
  endif()
  add_test(NAME "matrix go${version}: fetch the toolchain, build the fixtures"
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/matrix/build.sh ${version} ${dir} ${compile_flag})
  set_tests_properties("matrix go${version}: fetch the toolchain, build the fixtures" PROPERTIES
    FIXTURES_SETUP matrix_go${version} SKIP_RETURN_CODE 77 TIMEOUT 1200 RESOURCE_LOCK weave_matrix_build)
  foreach(test IN LISTS WEAVE_MATRIX_TESTS)
    set(args)
    if(test STREQUAL e2e_test_newgo AND version VERSION_LESS 1.23)
      set(args "--test-case-exclude=*range-over-func*") # Go 1.23+
    endif()
    if(test STREQUAL e2e_test_generics OR test STREQUAL e2e_test_types)
      set(args "--test-case-exclude=*newer Go*") # the row's own toolchain is the newer Go
    endif()
    add_test(NAME "matrix go${version}: ${test}" COMMAND ${test} ${args})
    set_tests_properties("matrix go${version}: ${test}" PROPERTIES
      ENVIRONMENT "WEAVE_MATRIX_FIXTURES=${dir};GOTOOLCHAIN=local"
      FIXTURES_REQUIRED matrix_go${version} SKIP_RETURN_CODE 77 TIMEOUT 600)
  endforeach()
  # arm64 for real, in qemu (tests/e2e/test_arm64_vm.cpp): the row's arm64 fixture and its stripped
  # build, one boot.
  add_test(NAME "matrix go${version}: e2e_test_arm64_vm"
           COMMAND e2e_test_arm64_vm "--test-case=*the fixture and its stripped build*")
  set_tests_properties("matrix go${version}: e2e_test_arm64_vm" PROPERTIES
    ENVIRONMENT "WEAVE_MATRIX_FIXTURES=${dir};GOTOOLCHAIN=local"
    FIXTURES_REQUIRED matrix_go${version} SKIP_RETURN_CODE 77 TIMEOUT 600)
  # The random-signature oracle (tests/oracle) with this toolchain's compiler: the same seed as the
  # pinned run, fewer functions, every value compared; line probes (`locals: all`) in the first chunk
  # on amd64 and 386. It builds in the Go build cache build.sh filled (the row's gocache link), where
  # the standard packages for amd64, 386 and arm64, -trimpath, are already compiled.
  foreach(config "amd64;400;1" "386;200;1" "arm64;100;0")
    list(GET config 0 arch)
    list(GET config 1 count)
    list(GET config 2 lines)
    add_test(NAME "matrix go${version}: oracle_${arch}"
             COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/oracle/run.sh --seed 1 --count ${count} --arch ${arch}
                     --lines ${lines} --build ${CMAKE_BINARY_DIR} --go ${dir}/go --work ${CMAKE_BINARY_DIR}/oracle/go${version}-${arch})
    set_tests_properties("matrix go${version}: oracle_${arch}" PROPERTIES
      ENVIRONMENT "WEAVE_GOCACHE=${dir}/gocache"
      FIXTURES_REQUIRED matrix_go${version} SKIP_RETURN_CODE 77 TIMEOUT 900)
  endforeach()
  if(compile_flag)
    # cmd/compile only: the fixture case's counts are the pinned build's.
    add_test(NAME "matrix go${version}: test_abi_crosscheck"
             COMMAND test_abi_crosscheck "--test-case=*over cmd/compile*")
    set_tests_properties("matrix go${version}: test_abi_crosscheck" PROPERTIES
      ENVIRONMENT "WEAVE_MATRIX_FIXTURES=${dir};GOTOOLCHAIN=local"
      FIXTURES_REQUIRED matrix_go${version} SKIP_RETURN_CODE 77 TIMEOUT 900)
    # Go 1.26.11: 35,105 of 35,154 locations agree exactly on amd64 (35,115 of 35,151 on arm64),
    # 0 unexplained; 3 argument widths are explained by what Go 1.23+ generates: two range-over-func
    # bodies naming one of the two values their iterator yields, and a directly called closure of
    # a shape instance whose captured dictionary is a parameter DWARF does not list.
  endif()
endforeach()

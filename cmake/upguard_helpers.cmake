# Helpers that keep CMakeLists.txt a manifest (after Abseil's absl_cc_library).
#
# upguard_cc_library(NAME digest SRCS digest.cc stats.cc DEPS upguard_base)
#   -> static library upguard_<NAME>, include root = src/ and include/.
# upguard_cc_test(SRCS digest_test.cc DEPS upguard_digest)
#   -> sources and deps collected into the single test binary `upguard_tests`.

function(upguard_cc_library)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS" ${ARGN})
  set(target upguard_${ARG_NAME})
  add_library(${target} STATIC ${ARG_SRCS})
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
  target_link_libraries(${target} PUBLIC ${ARG_DEPS})
  target_compile_options(${target} PRIVATE ${UPGUARD_WARNINGS})
  # For upguard_check_layers (upguard_layers.cmake): the folder ("diff" for src/diff) and DEPS.
  get_filename_component(folder ${CMAKE_CURRENT_SOURCE_DIR} NAME)
  set_target_properties(${target} PROPERTIES UPGUARD_FOLDER ${folder} UPGUARD_DEPS "${ARG_DEPS}")
  set_property(GLOBAL APPEND PROPERTY UPGUARD_LIBRARIES ${target})
endfunction()

function(upguard_cc_test)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  list(TRANSFORM ARG_SRCS PREPEND ${CMAKE_CURRENT_SOURCE_DIR}/)
  set_property(GLOBAL APPEND PROPERTY UPGUARD_TEST_SRCS ${ARG_SRCS})
  set_property(GLOBAL APPEND PROPERTY UPGUARD_TEST_DEPS ${ARG_DEPS})
endfunction()

# Call once, after every upguard_cc_test.
function(upguard_add_test_binary)
  get_property(srcs GLOBAL PROPERTY UPGUARD_TEST_SRCS)
  get_property(deps GLOBAL PROPERTY UPGUARD_TEST_DEPS)
  list(REMOVE_DUPLICATES deps)
  add_executable(upguard_tests ${srcs} ${PROJECT_SOURCE_DIR}/src/base/test_main.cc)
  target_link_libraries(upguard_tests PRIVATE ${deps} GTest::gtest)
  target_compile_options(upguard_tests PRIVATE ${UPGUARD_WARNINGS})
  target_compile_definitions(upguard_tests PRIVATE
    UPGUARD_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  gtest_discover_tests(upguard_tests DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 120)
endfunction()

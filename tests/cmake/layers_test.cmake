# The library-graph rule itself (cmake/upguard_layers.cmake), run by ctest as
# `cmake -P tests/cmake/layers_test.cmake`: allowed edges pass, upward and sideways ones fail.
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/upguard_layers.cmake)

function(expect lib folder dep dep_folder want_ok)
  upguard_layer_problem(${lib} ${folder} ${dep} ${dep_folder} problem)
  if(want_ok AND problem)
    message(FATAL_ERROR "expected ${lib} -> ${dep} to be allowed, got: ${problem}")
  elseif(NOT want_ok AND NOT problem)
    message(FATAL_ERROR "expected ${lib} (${folder}) -> ${dep} (${dep_folder}) to be refused")
  endif()
endfunction()

expect(upguard_diff diff upguard_trace trace TRUE)            # down
expect(upguard_conclude analysis upguard_setup_check analysis TRUE)  # own folder
expect(upguard_setup_check analysis upguard_diff diff TRUE)   # down
expect(upguard_diff diff upguard_setup_check analysis FALSE)  # up: the walk never sees analyses
expect(upguard_align align upguard_diff diff FALSE)           # up
expect(upguard_online_check online upguard_explain analysis FALSE)  # sideways on one layer
expect(upguard_online_check online upguard_recorder recorder TRUE)
expect(upguard_recorder recorder upguard_online_check online FALSE)  # up: the old edge
expect(upguard_recorder recorder upguard_diff diff FALSE)     # sideways on one layer
expect(upguard_capture capture upguard_recorder recorder FALSE)      # the old GlobMatch edge
expect(upguard_trace trace upguard_report report FALSE)
expect(upguard_new newfolder upguard_base base FALSE)          # a folder without a layer
message(STATUS "library graph rule: all cases as expected")

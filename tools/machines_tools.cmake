# upguard_machines_scale: issue 16's scale target, a detection pass over 1,000 machines x 7
# metrics x 15 minutes (bench/run_all.py --only machines); needs libtorch for the model it fits.
if(TARGET upguard_machines_fit)
  add_executable(upguard_machines_scale ${CMAKE_CURRENT_SOURCE_DIR}/machines_scale.cc)
  target_link_libraries(upguard_machines_scale PRIVATE upguard_machines_fit)
  target_compile_options(upguard_machines_scale PRIVATE ${UPGUARD_WARNINGS})
endif()
if(TARGET upguard_machines_scale AND UPGUARD_BUILD_TESTS)
  # The same pass, smaller, as a test: every method names the planted machine and no other.
  add_test(NAME machines_scale_names_the_planted_machine
           COMMAND upguard_machines_scale --machines 300 --points 300 --repeat 1)
  set_tests_properties(machines_scale_names_the_planted_machine PROPERTIES TIMEOUT 300)
endif()

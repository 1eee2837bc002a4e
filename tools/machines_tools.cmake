# upguard_machines_scale: issue 16's scale target, a detection pass over 1,000 machines x 7
# metrics x 15 minutes (bench/run_all.py --only machines); needs libtorch for the model it fits.
if(TARGET upguard_machines_fit)
  add_executable(upguard_machines_scale ${CMAKE_CURRENT_SOURCE_DIR}/machines_scale.cc)
  target_link_libraries(upguard_machines_scale PRIVATE upguard_machines_fit)
  target_compile_options(upguard_machines_scale PRIVATE ${UPGUARD_WARNINGS})
endif()

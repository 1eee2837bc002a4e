# upguard_ugt_text: converts the text form of a trace (docs/formats/trace.md, Appendix A) to a
# binary .ugt file and back. Golden tests build their traces with it.
add_executable(upguard_ugt_text ${CMAKE_CURRENT_SOURCE_DIR}/ugt_text.cc)
target_link_libraries(upguard_ugt_text PRIVATE upguard_trace)
target_compile_options(upguard_ugt_text PRIVATE ${UPGUARD_WARNINGS})

# Synthetic GPT-like runs of any size (benchmarks, tests): tools/synthetic_trace.h.
add_library(upguard_synthetic_trace STATIC ${CMAKE_CURRENT_SOURCE_DIR}/synthetic_program.cc
                                           ${CMAKE_CURRENT_SOURCE_DIR}/synthetic_gpt.cc
                                           ${CMAKE_CURRENT_SOURCE_DIR}/synthetic_gpt_layers.cc
                                           ${CMAKE_CURRENT_SOURCE_DIR}/synthetic_trace.cc)
target_include_directories(upguard_synthetic_trace PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(upguard_synthetic_trace PUBLIC upguard_trace PkgConfig::XXHASH
                                                     nlohmann_json::nlohmann_json)
target_compile_options(upguard_synthetic_trace PRIVATE ${UPGUARD_WARNINGS})

# upguard_gen_synthetic_trace OUT_DIR --ops N --steps S [--diverge-at K]
add_executable(upguard_gen_synthetic_trace ${CMAKE_CURRENT_SOURCE_DIR}/gen_synthetic_trace.cc)
target_link_libraries(upguard_gen_synthetic_trace PRIVATE upguard_synthetic_trace upguard_cli)
target_compile_options(upguard_gen_synthetic_trace PRIVATE ${UPGUARD_WARNINGS})
upguard_cc_test(SRCS synthetic_trace_test.cc DEPS upguard_synthetic_trace)

# upguard_synth_run --ranks N --steps S --ops-per-step K --out DIR [--diverge-rank R ...]
add_executable(upguard_synth_run ${CMAKE_CURRENT_SOURCE_DIR}/synth_run.cc)
target_link_libraries(upguard_synth_run PRIVATE upguard_synthetic_trace upguard_diff upguard_cli)
target_compile_options(upguard_synth_run PRIVATE ${UPGUARD_WARNINGS})

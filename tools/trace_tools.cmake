# upguard_ugt_text: converts the text form of a trace (docs/formats/trace.md, Appendix A) to a
# binary .ugt file and back. Golden tests build their traces with it.
add_executable(upguard_ugt_text ${CMAKE_CURRENT_SOURCE_DIR}/ugt_text.cc)
target_link_libraries(upguard_ugt_text PRIVATE upguard_trace)
target_compile_options(upguard_ugt_text PRIVATE ${UPGUARD_WARNINGS})

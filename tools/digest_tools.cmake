# upguard_gen_digest_vectors > tests/data/digest_vectors.txt  (docs/formats/digest.md §8)
add_executable(upguard_gen_digest_vectors gen_digest_vectors.cc)
target_link_libraries(upguard_gen_digest_vectors PRIVATE upguard_digest_vectors)
target_compile_options(upguard_gen_digest_vectors PRIVATE ${UPGUARD_WARNINGS})

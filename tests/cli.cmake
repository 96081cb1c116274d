# CLI and golden-report tests (tests/cli/*.cpp, compiled into mfusim_tests)
# run the built `mfusim` binary, whose path they get here.
add_dependencies(mfusim_tests mfusim)
target_compile_definitions(mfusim_tests PRIVATE MFUSIM_CLI="$<TARGET_FILE:mfusim>")

# The command as a user sees it: exit codes, messages, files (run_cli.sh).
add_test(NAME cli.behaviour COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/run_cli.sh $<TARGET_FILE:sinter_cli>)
# The embedding example runs end to end (on the GPU when present, else ref).
add_test(NAME cli.embed COMMAND sinter_embed ${CMAKE_SOURCE_DIR}/samples/resblock.sir N=2)
set_tests_properties(cli.embed PROPERTIES PASS_REGULAR_EXPRESSION "out: f32\\[2,8,16,16\\] -?[0-9]")
# The benchmark harness's table and JSON code on fake numbers (no GPU, no torch).
add_test(NAME benchmarks.dry_run COMMAND python3 ${CMAKE_SOURCE_DIR}/benchmarks/run.py --dry-run --out ${CMAKE_BINARY_DIR}/bench-dry)
# The model suite's listing (>= 40 models over every family) and its summary
# and table code on synthetic records (benchmarks/suite.py; no GPU, no torch).
add_test(NAME benchmarks.suite COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/suite_check.py)
set_tests_properties(benchmarks.suite PROPERTIES PASS_REGULAR_EXPRESSION "suite_check: all checks passed")
# Ctrl-C or SIGTERM during run -o leaves no temp file (issue 31, item 16).
add_test(NAME cli.signal_cleanup COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/signal_cleanup.py $<TARGET_FILE:sinter_cli>)
set_tests_properties(cli.signal_cleanup PROPERTIES PASS_REGULAR_EXPRESSION "no temp file left")
# bash completion (and the zsh script's syntax); options listed = options in --help.
add_test(NAME cli.completion COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/completion.sh $<TARGET_FILE:sinter_cli>)
set_tests_properties(cli.completion PROPERTIES PASS_REGULAR_EXPRESSION "completion: all checks passed")

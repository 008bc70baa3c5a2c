# Tuning records from the command line: export, import, merge, stats, clear.
add_test(NAME cli.cache_records COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/run_cache_records.sh $<TARGET_FILE:sinter_cli>)

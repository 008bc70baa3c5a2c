# samples.cmake: the tests of samples/*.sir.
#
# Included by tests/CMakeLists.txt, it registers:
#   samples.check.<name>      sinter check samples/<name>.sir --shape N=1
#   samples.roundtrip.<name>  print, parse the printed text, print again: same text
#   samples.run.resblock      run the small block on the reference interpreter
#                             twice: exit 0, output f32[2,8,16,16], same bytes
#   samples.generated         samples/*.sir are what scripts/gen_samples.py writes
#
# Run as a script (cmake -DMODE=roundtrip|run -DSINTER=... -DSIR=... -DWORK=...
# -P samples.cmake) it performs one of those checks.

if(CMAKE_SCRIPT_MODE_FILE)
  get_filename_component(name ${SIR} NAME_WE)
  file(MAKE_DIRECTORY ${WORK})
  if(MODE STREQUAL "run")
    foreach(k 1 2)
      set(out ${WORK}/${name}.run${k}.safetensors)
      file(REMOVE ${out})
      execute_process(COMMAND ${SINTER} run ${SIR} --device ref --init random --seed 1
                              --shape N=2 -o ${out}
                      OUTPUT_VARIABLE log ERROR_VARIABLE err RESULT_VARIABLE rc)
      message("${log}${err}")
      if(NOT rc EQUAL 0)
        message(FATAL_ERROR "sinter run ${SIR} failed (${rc})")
      endif()
      if(NOT log MATCHES "f32\[2,8,16,16\]")
        message(FATAL_ERROR "sinter run ${SIR}: the summary does not show the output type f32[2,8,16,16]")
      endif()
      file(SIZE ${out} size)
      # 2*8*16*16 f32 values plus a header
      if(size LESS 16384)
        message(FATAL_ERROR "${out}: ${size} bytes, fewer than the 16384 of the output's data")
      endif()
    endforeach()
    execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files
                            ${WORK}/${name}.run1.safetensors ${WORK}/${name}.run2.safetensors
                    RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "${name}: two runs with --seed 1 wrote different outputs")
    endif()
    return()
  endif()
  set(once ${WORK}/${name}.print1.sir)
  set(twice ${WORK}/${name}.print2.sir)
  execute_process(COMMAND ${SINTER} print ${SIR} OUTPUT_FILE ${once} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "sinter print ${SIR} failed (${rc})")
  endif()
  execute_process(COMMAND ${SINTER} print ${once} OUTPUT_FILE ${twice} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "sinter print ${once} failed (${rc}): the printed text does not parse")
  endif()
  file(READ ${once} a)
  file(READ ${twice} b)
  if(NOT a STREQUAL b)
    message(FATAL_ERROR "${name}: print(parse(print(${SIR}))) differs from print(${SIR}); see ${once} and ${twice}")
  endif()
  string(LENGTH "${a}" len)
  if(len LESS 100)
    message(FATAL_ERROR "${name}: the printed text is only ${len} bytes")
  endif()
  message(STATUS "${name}: print is a fixed point (${len} bytes)")
  return()
endif()

set(SAMPLES_DIR ${CMAKE_SOURCE_DIR}/samples)
file(GLOB SAMPLE_FILES CONFIGURE_DEPENDS ${SAMPLES_DIR}/*.sir)
foreach(sir ${SAMPLE_FILES})
  get_filename_component(name ${sir} NAME_WE)
  add_test(NAME samples.check.${name}
    COMMAND $<TARGET_FILE:sinter_cli> check ${sir} --shape N=1)
  add_test(NAME samples.roundtrip.${name}
    COMMAND ${CMAKE_COMMAND} -DMODE=roundtrip -DSINTER=$<TARGET_FILE:sinter_cli> -DSIR=${sir}
            -DWORK=${CMAKE_CURRENT_BINARY_DIR}/samples-work -P ${CMAKE_CURRENT_LIST_FILE})
endforeach()

add_test(NAME samples.run.resblock
  COMMAND ${CMAKE_COMMAND} -DMODE=run -DSINTER=$<TARGET_FILE:sinter_cli> -DSIR=${SAMPLES_DIR}/resblock.sir
          -DWORK=${CMAKE_CURRENT_BINARY_DIR}/samples-work -P ${CMAKE_CURRENT_LIST_FILE})

find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  add_test(NAME samples.generated
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/scripts/gen_samples.py --check --out ${SAMPLES_DIR})
endif()

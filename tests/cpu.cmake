# cpu.cmake: the cpu device (--device cpu) against the reference
# interpreter (tests/cpu_ref.py): cpu.ops runs every op's programs fused
# and unfused, cpu.samples every samples/*.sir at batch 1. Needs the cpu
# device in this build and a python with numpy (-DSINTER_PYTHON).
if(SINTER_PYTHON AND SINTER_LLVM_LIBRARY)
  add_test(NAME cpu.ops COMMAND ${SINTER_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/cpu_ref.py
           $<TARGET_FILE:sinter_cli> ${CMAKE_SOURCE_DIR}/samples --ops-only)
  # CI's budget (120 s for the cpu tests in the ASan build, 2 cores; they
  # took 62 s there on 2026-11-23, ResNet-50 on the reference interpreter
  # 34 s of it) leaves GPT-2 out: the reference interpreter alone needs
  # minutes there for its 512 tokens. All four: cpu_ref.py BUILD/sinter
  # samples --samples-only on a Release build (about 30 s).
  add_test(NAME cpu.samples COMMAND ${SINTER_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/cpu_ref.py
           $<TARGET_FILE:sinter_cli> ${CMAKE_SOURCE_DIR}/samples --samples-only --only mlp,resblock,resnet50)
  set_tests_properties(cpu.ops cpu.samples PROPERTIES TIMEOUT 600)
endif()

# cpu.cmake: the cpu device (--device cpu) against the reference
# interpreter (tests/cpu_ref.py): cpu.ops runs every op's programs fused
# and unfused, cpu.samples every samples/*.sir at batch 1. Needs the cpu
# device in this build and a python with numpy (-DSINTER_PYTHON).
if(SINTER_PYTHON AND SINTER_LLVM_LIBRARY)
  add_test(NAME cpu.ops COMMAND ${SINTER_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/cpu_ref.py
           $<TARGET_FILE:sinter_cli> ${CMAKE_SOURCE_DIR}/samples --ops-only)
  # CI's budget (120 s for the cpu tests in the ASan build, 2 cores; they
  # took 62 s there on 2026-11-23, ResNet-50 on the reference interpreter
  # 34 s of it) cannot take GPT-2 on its 512 tokens: the reference
  # interpreter alone needs minutes there. cpu.samples.gpt2 checks the
  # same model (every op, all 12 layers, the same weights' shapes) on 32
  # tokens: 38 s in the ASan build on the loaded 2-core machine
  # (2026-11-23). All four at full size: cpu_ref.py BUILD/sinter samples
  # --samples-only on a Release build.
  add_test(NAME cpu.samples COMMAND ${SINTER_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/cpu_ref.py
           $<TARGET_FILE:sinter_cli> ${CMAKE_SOURCE_DIR}/samples --samples-only --only mlp,resblock,resnet50)
  add_test(NAME cpu.samples.gpt2 COMMAND ${SINTER_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/cpu_ref.py
           $<TARGET_FILE:sinter_cli> ${CMAKE_SOURCE_DIR}/samples --samples-only --only gpt2 --tokens 32)
  # --precision bf16 (bf16 storage, fp32 arithmetic) against the reference
  # interpreter running the same bf16 graph, within 2e-2 (cpu_ref.py):
  # every op's programs and every sample (GPT-2 on 32 tokens, as above).
  # 2026-11-23, 2 cores at load average 8-9: cpu.ops.bf16 24 s Release,
  # 40 s ASan; cpu.samples.bf16 60 s Release, 7 min wall (80 s of CPU)
  # ASan: ResNet-50 on the reference interpreter is most of it.
  add_test(NAME cpu.ops.bf16 COMMAND ${SINTER_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/cpu_ref.py
           $<TARGET_FILE:sinter_cli> ${CMAKE_SOURCE_DIR}/samples --ops-only --precision bf16)
  add_test(NAME cpu.samples.bf16 COMMAND ${SINTER_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/cpu_ref.py
           $<TARGET_FILE:sinter_cli> ${CMAKE_SOURCE_DIR}/samples --samples-only --precision bf16 --tokens 32
           --only gpt2,mlp,resblock,resnet50)
  # samples/llama.sir (Llama 3.2 1B's shape, a symbol T, state) is too big
  # for the reference interpreter here: state.generate checks its tiny
  # twin, tests/state/tiny_llama.sir, on ref and cpu
  set_tests_properties(cpu.ops cpu.samples cpu.samples.gpt2 cpu.ops.bf16 cpu.samples.bf16 PROPERTIES TIMEOUT 600)
endif()

# GPU tests (label "gpu"): compiled in every build with CUDA; without a usable device they
# print the reason and exit 77, which CTest reports as skipped. They run on the H200 machine
# through scripts/h200.sh.
#
#   halox_gpu_test(NAME SOURCES a.c [b.cu] [ARGS ...] [LABELS ...])
#   halox_gpu_mpi_test(NAME SOURCES a.c RANKS 2 4 8 [ARGS ...])   several PEs (MPS on one GPU)
#
# Every multi-rank GPU test starts under a launcher timeout: `timeout -s KILL` around mpirun
# kills mpirun and its ranks (timeout signals its whole process group) after
# HALOX_GPU_LAUNCH_TIMEOUT seconds, before ctest's own TIMEOUT. A rank spinning in a GPU wait
# ignores ctest's signal to mpirun, and the test then ran on for minutes; killed, it is reported
# as failed (exit 137) and the next test starts.
set(HALOX_EMU_SLOW_MS 100 CACHE STRING
    "CPU emulation: pause in ms of the slow PE of the NVSHMEM ordering-fault tests")
set(HALOX_GPU_LAUNCH_TIMEOUT 300 CACHE STRING
    "seconds after which a multi-rank GPU test is killed (timeout -s KILL around mpirun)")
find_program(HALOX_TIMEOUT_PROGRAM timeout)
function(halox_gpu_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LABELS;ARGS" ${ARGN})
  if(NOT HALOX_HAVE_CUDA OR (HALOX_GPU_EMULATE AND "halo" IN_LIST T_LABELS))
    return() # too long in the CPU emulation (see below)
  endif()
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE halox_testutil)
  target_compile_options(${name} PRIVATE ${HALOX_ALL_WARNINGS})
  add_test(NAME ${name} COMMAND ${name} ${T_ARGS})
  set_tests_properties(${name} PROPERTIES LABELS "gpu;${T_LABELS}" TIMEOUT 900
                       SKIP_RETURN_CODE 77)
endfunction()

function(halox_gpu_mpi_test name)
  cmake_parse_arguments(T "" "" "SOURCES;RANKS;ARGS;LABELS" ${ARGN})
  if(NOT HALOX_HAVE_CUDA OR NOT HALOX_HAVE_MPI OR (HALOX_GPU_EMULATE AND "halo" IN_LIST T_LABELS))
    return()
  endif()
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE halox_testutil)
  target_compile_options(${name} PRIVATE ${HALOX_ALL_WARNINGS})
  set(launcher "")
  if(HALOX_TIMEOUT_PROGRAM)
    set(launcher ${HALOX_TIMEOUT_PROGRAM} -s KILL ${HALOX_GPU_LAUNCH_TIMEOUT})
  endif()
  math(EXPR ctest_timeout "${HALOX_GPU_LAUNCH_TIMEOUT} + 60")
  foreach(n ${T_RANKS})
    add_test(NAME ${name}_np${n}
             COMMAND ${launcher} ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${n}
                     ${HALOX_MPIEXEC_FLAGS} -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY
                     -x NVSHMEM_DISABLE_NVLS $<TARGET_FILE:${name}> ${T_ARGS})
    set_tests_properties(${name}_np${n} PROPERTIES LABELS "gpu;mpi;${T_LABELS}"
                         TIMEOUT ${ctest_timeout} SKIP_RETURN_CODE 77 PROCESSORS 1)
  endforeach()
endfunction()

halox_gpu_test(test_gpu_device SOURCES test_gpu_device.c LABELS emulation)

# The GPU halo backends (issue 11). Every test also builds (and reports skipped) without a GPU.
# The CPU emulation build leaves the tests labelled halo out (their full sizes and the stress
# take too long there) and runs test_gpu_halo on small cases instead (below).
if(HALOX_HAVE_CUDA)
  add_library(halox_gpu_halo_fixture STATIC gpu_halo_fixture.c plan_fixture.c)
  # the NVSHMEM module with its test hooks (stress, withheld signals, fault injection, traces)
  target_link_libraries(halox_gpu_halo_fixture PUBLIC halox_test_hooks halox_testutil)
endif()
# single process: the shared pack/unpack kernels (the compute-sanitizer target)
halox_gpu_test(test_gpu_halo_kernels SOURCES test_gpu_halo_kernels.c plan_fixture.c LABELS halo)
# every backend/path/variant against the host backend, 1D/2D/3D, multi-pulse, empty domains
halox_gpu_mpi_test(test_gpu_halo SOURCES test_gpu_halo.c RANKS 2 4 8 LABELS halo)
# NVSHMEM with injected delays, thousands of steps, bit-exact
halox_gpu_mpi_test(test_gpu_halo_stress SOURCES test_gpu_halo_stress.c RANKS 2 4 8
                   ARGS --steps 2000 LABELS halo stress)
# withheld signals caught by the deadline with the exact message; MPS placement rule
halox_gpu_mpi_test(test_gpu_halo_deadline SOURCES test_gpu_halo_deadline.c RANKS 2 LABELS halo)
# one owner of the device: the context on one device while the caller keeps another current, a
# stream of the other device refused, gpu-mpi and the gpu MD engine right on it (two GPUs, or the
# emulation with two devices)
halox_gpu_mpi_test(test_gpu_context SOURCES test_gpu_context.c RANKS 1 2 LABELS ownership emulation)
if(TEST test_gpu_context_np1 AND HALOX_GPU_EMULATE)
  set_tests_properties(test_gpu_context_np1 test_gpu_context_np2 PROPERTIES
                       ENVIRONMENT HALOX_EMU_DEVICES=2)
endif()
foreach(t test_gpu_halo test_gpu_halo_stress test_gpu_halo_deadline test_gpu_context)
  if(TARGET ${t})
    target_link_libraries(${t} PRIVATE halox_gpu_halo_fixture)
  endif()
endforeach()

# The GPU halo backends in the CPU emulation (CI), test_gpu_halo on small cases against the host
# backend: NVSHMEM emulated over POSIX shared memory between the ranks (tests/emu/nvshmem.h),
# every block of its kernels running at once, blocks of 64 threads; gpu-direct's IPC handles
# mapped from the exporter's memfd (tests/emu/emu_runtime.cpp). Every backend on 2 ranks (one
# emulated GPU: GPU-scope ordering), gpu-mpi and gpu-direct on 4 ranks (2x2x1, two emulated
# GPUs: peer access, pulses that forward atoms); the nvshmem configurations (automatic path,
# forced P2P, forced network with put-with-signal, P2P through the bulk-copy path) on 4 ranks
# (system scope) with PE 0 slow (HALOX_EMU_SLOW_PE: it pauses after every signal it publishes,
# its blocks held), which a correct protocol must not notice; the same run with
# HALOX_TEST_INJECT=x-early (blocks publish coordinates before packing their forwarded atoms) and
# f-early (forces counted accumulated before they are added) must fail, every time, with a
# mismatch that names rank, step, atom and pulse: the slow PE's pause turns the race each fault
# opens into a certainty (tests/emu/emu_device.h).
if(HALOX_GPU_EMULATE AND TARGET halox_nvshmem_hooks)
  add_executable(test_gpu_halo test_gpu_halo.c)
  target_link_libraries(test_gpu_halo PRIVATE halox_gpu_halo_fixture halox_testutil)
  target_compile_options(test_gpu_halo PRIVATE ${HALOX_ALL_WARNINGS})
  function(halox_emu_halo_test name ranks)
    cmake_parse_arguments(T "" "FAIL" "ARGS;ENV" ${ARGN})
    set(cmd ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${ranks} ${HALOX_MPIEXEC_FLAGS}
            $<TARGET_FILE:test_gpu_halo> ${T_ARGS})
    if(HALOX_TIMEOUT_PROGRAM)
      list(PREPEND cmd ${HALOX_TIMEOUT_PROGRAM} -s KILL ${HALOX_GPU_LAUNCH_TIMEOUT})
    endif()
    if(T_FAIL)
      list(PREPEND cmd ${CMAKE_CURRENT_SOURCE_DIR}/expect_failure.sh ${T_FAIL})
    endif()
    add_test(NAME ${name} COMMAND ${cmd})
    math(EXPR ctest_timeout "${HALOX_GPU_LAUNCH_TIMEOUT} + 60")
    set_tests_properties(${name} PROPERTIES LABELS "gpu;mpi;halo;emulation" PROCESSORS 1
                         TIMEOUT ${ctest_timeout} ENVIRONMENT "HALOX_ALLOW_NO_MPS=1;${T_ENV}")
  endfunction()
  # every backend (gpu-mpi, gpu-direct through the peer's mapped memory, nvshmem) on one emulated
  # GPU (2 ranks); gpu-mpi and gpu-direct on two (4 ranks: 2x2x1, peer access across devices;
  # nvshmem's 4 ranks are the slow-PE run below, ~60 s in the emulation)
  halox_emu_halo_test(test_gpu_halo_np2 2 ARGS --small ENV HALOX_EMU_DEVICES=1)
  halox_emu_halo_test(test_gpu_halo_np4 4 ARGS --small --only gpu-mpi,gpu-direct
                      ENV HALOX_EMU_DEVICES=2)
  set(_slow HALOX_EMU_DEVICES=2 HALOX_EMU_SLOW_PE=0:${HALOX_EMU_SLOW_MS})
  halox_emu_halo_test(test_gpu_halo_nvshmem_np4 4 ARGS --only nvshmem --grid 2x2x1 --small
                      ENV ${_slow})
  # x-early concerns the P2P path only; f-early both (the network path's force put reads f too)
  halox_emu_halo_test(test_gpu_halo_inject_x_early_np4 4
                      ARGS --only nvshmem/auto --grid 2x2x1 --small
                      ENV ${_slow} HALOX_TEST_INJECT=x-early
                      FAIL "rank [0-9]+ step [0-9]+: x of local atom [0-9]+ \\(pulse [0-9]+ from rank [0-9]+")
  halox_emu_halo_test(test_gpu_halo_inject_f_early_np4 4
                      ARGS --only nvshmem/auto,nvshmem/network --grid 2x2x1 --small
                      ENV ${_slow} HALOX_TEST_INJECT=f-early
                      FAIL "rank [0-9]+ step [0-9]+: f of local atom [0-9]+ \\((home|halo), pulse -?[0-9]+ from rank [0-9]+")
  # the emulation itself (tests/emu/test_emu_nvshmem.cpp): the NVSHMEM model (symmetric memory,
  # put-with-signal ordering, comparisons, the slow PE's hold), and its deadlines, which must
  # end a wait that never ends with a message
  add_executable(test_emu_nvshmem emu/test_emu_nvshmem.cpp)
  target_link_libraries(test_emu_nvshmem PRIVATE halox MPI::MPI_C)
  target_compile_options(test_emu_nvshmem PRIVATE -Wall -Wextra -Wno-unused-parameter)
  set(_emu_cmd ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 ${HALOX_MPIEXEC_FLAGS}
               $<TARGET_FILE:test_emu_nvshmem>)
  add_test(NAME test_emu_nvshmem_np2 COMMAND ${_emu_cmd})
  add_test(NAME test_emu_nvshmem_deadline_np2
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/expect_failure.sh
                   "PE 0: nvshmem_signal_wait_until: waited 1 s .*; aborting" ${_emu_cmd} --deadline)
  # (a step deadline of 2 s: device waits give up at half of it)
  add_test(NAME test_emu_nvshmem_hang_np2
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/expect_failure.sh
                   "has not ended after 2 s: .* still wait" ${_emu_cmd} --hang)
  set_tests_properties(test_emu_nvshmem_np2 test_emu_nvshmem_deadline_np2
                       test_emu_nvshmem_hang_np2 PROPERTIES LABELS "gpu;mpi;emulation"
                       PROCESSORS 1 TIMEOUT 120)
  set_tests_properties(test_emu_nvshmem_deadline_np2 PROPERTIES
                       ENVIRONMENT "HALOX_WAIT_TIMEOUT=2")
  set_tests_properties(test_emu_nvshmem_hang_np2 PROPERTIES ENVIRONMENT "HALOX_EMU_GRID_TIMEOUT=2")
endif()

# GPU compute of the single-GPU MD step (src/md/gpu/nb_gpu.cu, search_gpu.cu, update_gpu.cu):
# against the CPU path; --quick is what the CPU emulation build (HALOX_GPU_EMULATE) runs.
if(HALOX_HAVE_CUDA)
  add_library(halox_gputest STATIC test_gpu_common.c)
  target_link_libraries(halox_gputest PUBLIC halox_test_hooks halox_testutil)
  target_compile_options(halox_gputest PRIVATE ${HALOX_WARNINGS})
  if(HALOX_GPU_EMULATE)
    set(HALOX_GPU_TEST_ARGS --quick)
  else()
    set(HALOX_GPU_TEST_ARGS "")
  endif()
endif()
halox_gpu_test(test_gpu_nb SOURCES test_gpu_nb.c ARGS ${HALOX_GPU_TEST_ARGS} LABELS emulation)
if(TARGET test_gpu_nb)
  target_link_libraries(test_gpu_nb PRIVATE halox_gputest)
endif()
halox_gpu_test(test_gpu_update SOURCES test_gpu_update.c LABELS emulation)
if(TARGET test_gpu_update)
  target_link_libraries(test_gpu_update PRIVATE halox_gputest)
endif()
# the engine's GPU step: its --quick (648 atoms, a few dozen steps) runs in the CPU emulation
halox_gpu_test(test_gpu_md SOURCES test_gpu_md.c ARGS ${HALOX_GPU_TEST_ARGS} LABELS emulation)
if(TARGET test_gpu_md)
  target_link_libraries(test_gpu_md PRIVATE halox_gputest)
endif()

# Ethanol in water on the GPU (issue 15): bonded terms, SHAKE and the mixture's exclusions
# against the CPU path (modules and engine), NVE at 2 fs; and two ranks against one GPU
halox_gpu_test(test_gpu_ethanol SOURCES test_gpu_ethanol.c ARGS ${HALOX_GPU_TEST_ARGS}
               LABELS ethanol emulation)
if(TARGET test_gpu_ethanol)
  target_link_libraries(test_gpu_ethanol PRIVATE halox_gputest)
endif()
halox_gpu_mpi_test(test_gpu_ethanol_dd SOURCES test_gpu_ethanol_dd.c RANKS 2
                   ARGS ${HALOX_GPU_TEST_ARGS} LABELS ethanol dd)
if(TARGET test_gpu_ethanol_dd)
  target_link_libraries(test_gpu_ethanol_dd PRIVATE halox_gputest)
endif()

# The single-GPU MD benchmark (bench/gpu_md_bench.c, the engine's step timed per configuration):
# built with CUDA, run on the GPU machine (docs/design/gpu-engine.md, scripts/h200_probe.sh).
if(HALOX_HAVE_CUDA)
  add_executable(gpu_md_bench ${PROJECT_SOURCE_DIR}/bench/gpu_md_bench.c)
  target_include_directories(gpu_md_bench PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${HALOX_CJSON_INCLUDE})
  target_link_libraries(gpu_md_bench PRIVATE halox_gputest ${HALOX_CJSON_LIB})
  target_compile_options(gpu_md_bench PRIVATE ${HALOX_WARNINGS})
endif()
# Kernel launches and signal hops of processes sharing one GPU under MPS (bench/mps_dispatch.cu):
# what the exchange's time per dependency level is made of (docs/design/gpu-results.md)
if(HALOX_HAVE_CUDA AND NOT HALOX_GPU_EMULATE)
  add_executable(mps_dispatch ${PROJECT_SOURCE_DIR}/bench/mps_dispatch.cu)
  target_link_libraries(mps_dispatch PRIVATE halox)
  # One message between two processes' GPUs (flag, float4 stores, bulk copy; 4-128 KB): the
  # floors of the exchange on one GPU under MPS and across GPUs (docs/design/gpu-results.md)
  add_executable(link_floors ${PROJECT_SOURCE_DIR}/bench/link_floors.cu)
  target_link_libraries(link_floors PRIVATE halox)
endif()
# The "gpu" MD backend in the engine's schedule against the "cpu" backend (one domain; two
# domains on one GPU through the gpu-mpi halo)
halox_gpu_mpi_test(test_gpu_engine SOURCES test_gpu_engine.c RANKS 1 2)

# The decomposed GPU step (issue 13): every GPU halo backend in the engine's schedule against
# the CPU engine and one GPU, 1D/2D/3D and two-pulse grids, NVE drift, a stressed NVSHMEM run
# (the CPU emulation: --quick, 40 steps without the drift and the stress)
halox_gpu_mpi_test(test_gpu_dd_md SOURCES test_gpu_dd_md.c RANKS 2 4 8
                   ARGS ${HALOX_GPU_TEST_ARGS} LABELS dd)
if(TARGET test_gpu_dd_md)
  target_link_libraries(test_gpu_dd_md PRIVATE halox_gputest)
endif()
# Both on 2 ranks in the CPU emulation (CI): two processes sharing emulated GPU 0, as under MPS
if(HALOX_GPU_EMULATE AND TEST test_gpu_dd_md_np2 AND TEST test_gpu_ethanol_dd_np2)
  set_tests_properties(test_gpu_dd_md_np2 PROPERTIES LABELS "gpu;mpi;dd;emulation"
                       ENVIRONMENT "HALOX_ALLOW_NO_MPS=1")
  set_tests_properties(test_gpu_ethanol_dd_np2 PROPERTIES LABELS "gpu;mpi;ethanol;dd;emulation"
                       ENVIRONMENT "HALOX_ALLOW_NO_MPS=1")
endif()
# No rank left waiting on the GPU backends (docs/robustness.md, "Hangs"): a failing pulse, a
# stream that does not finish, an IPC export failing at set-up (gpu-mpi, gpu-direct: also in the
# CPU emulation), and the NVSHMEM hang across GPUs with the default device deadline (also in the
# emulation with MPI, which has the nvshmem backend: two emulated GPUs, one per rank, as the
# case means, and no MPS refusal); every rank returns in time with the failing rank's message.
halox_gpu_mpi_test(test_gpu_waits SOURCES test_gpu_waits.c RANKS 2 LABELS waits emulation)
if(TARGET test_gpu_waits)
  target_link_libraries(test_gpu_waits PRIVATE halox_gpu_halo_fixture)
endif()
# In the CPU emulation (built with the emulated NVSHMEM since the nvshmem backend runs there) the
# two ranks get one emulated GPU each, so the NVSHMEM case is the hang across GPUs; no MPS there.
if(HALOX_GPU_EMULATE AND TEST test_gpu_waits_np2)
  set_tests_properties(test_gpu_waits_np2 PROPERTIES
                       ENVIRONMENT "HALOX_ALLOW_NO_MPS=1;HALOX_EMU_DEVICES=2")
endif()

# The decomposed search step on the device (issue 27) against the host decomposition, every
# domain in one process (the serial communicator): migration, local set, plan maps, topology,
# bit for bit at every search step. Runs in the CPU emulation (CI) and on the GPU.
halox_gpu_test(test_gpu_decomp SOURCES test_gpu_decomp.c test_ethanol_common.c
               ARGS ${HALOX_GPU_TEST_ARGS} LABELS dd emulation)
if(TARGET test_gpu_decomp)
  target_link_libraries(test_gpu_decomp PRIVATE halox_gputest)
endif()

# The engine with its search steps on the device against the same engine searching on the host
# (issue 27): in one process with the gpu-local halo (the CPU emulation runs it), and under MPI
# with every GPU halo backend (the H200)
halox_gpu_test(test_gpu_dd_search SOURCES test_gpu_dd_search.c test_ethanol_common.c
               ARGS ${HALOX_GPU_TEST_ARGS} LABELS dd emulation)
if(TARGET test_gpu_dd_search)
  target_link_libraries(test_gpu_dd_search PRIVATE halox_gputest)
endif()
halox_gpu_mpi_test(test_gpu_dd_search_mpi SOURCES test_gpu_dd_search.c test_ethanol_common.c
                   RANKS 2 4 8 LABELS dd)
if(TARGET test_gpu_dd_search_mpi)
  target_compile_definitions(test_gpu_dd_search_mpi PRIVATE HX_TEST_MPI=1)
  target_link_libraries(test_gpu_dd_search_mpi PRIVATE halox_gputest)
endif()
# The CPU emulation: the search step's messages driven by the host (gpu-mpi: sizes and bytes
# through MPI, tagged, failure markers; gpu-direct: sizes through MPI, bytes into the peer's
# mapped memory) across 2 processes, both slow paths included
if(HALOX_GPU_EMULATE)
  halox_gpu_mpi_test(test_gpu_dd_search_gpumpi SOURCES test_gpu_dd_search.c test_ethanol_common.c
                     RANKS 2 ARGS --quick --halo gpu-mpi LABELS dd emulation)
  if(TARGET test_gpu_dd_search_gpumpi)
    target_compile_definitions(test_gpu_dd_search_gpumpi PRIVATE HX_TEST_MPI=1)
    target_link_libraries(test_gpu_dd_search_gpumpi PRIVATE halox_gputest)
    # with NVSHMEM emulated over shared memory: the message kernel (P2P stores and signals), its
    # graphs, the symmetric channels re-made on the slow path (`--path network` runs the
    # put-with-signal path, by hand: ~1 min more); with gpu-direct: the IPC mappings closed and
    # made again on the slow path (the same program, other options)
    math(EXPR hx_dds_timeout "${HALOX_GPU_LAUNCH_TIMEOUT} + 60")
    foreach(h nvshmem gpu-direct)
      string(REPLACE "-" "" hn ${h})
      if(HALOX_TIMEOUT_PROGRAM AND (NOT h STREQUAL "nvshmem" OR TARGET halox_nvshmem_hooks))
        add_test(NAME test_gpu_dd_search_${hn}_np2
                 COMMAND ${HALOX_TIMEOUT_PROGRAM} -s KILL ${HALOX_GPU_LAUNCH_TIMEOUT}
                         ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 ${HALOX_MPIEXEC_FLAGS}
                         $<TARGET_FILE:test_gpu_dd_search_gpumpi> --quick --halo ${h})
        set_tests_properties(test_gpu_dd_search_${hn}_np2 PROPERTIES
                             LABELS "gpu;mpi;dd;emulation" TIMEOUT ${hx_dds_timeout}
                             SKIP_RETURN_CODE 77 PROCESSORS 1
                             ENVIRONMENT "HALOX_ALLOW_NO_MPS=1")
      endif()
    endforeach()
  endif()
endif()

# The search step's timeline traced for real (HALOX_SEARCH_TRACE, src/gpu/trace.h): halox md on
# 2 processes sharing the GPU (in the CPU emulation, emulated GPU 0), the trace read by
# scripts/search_trace.py and its aligned clocks checked for causality
if(HALOX_HAVE_CUDA AND HALOX_HAVE_MPI AND HALOX_TIMEOUT_PROGRAM)
  add_test(NAME test_gpu_search_trace_np2
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_search_trace.sh ${PROJECT_SOURCE_DIR}
                   $<TARGET_FILE:halox_app> ${MPIEXEC_EXECUTABLE} ${HALOX_MPIEXEC_FLAGS}
                   -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x NVSHMEM_DISABLE_NVLS
                   -x HALOX_SEARCH_TRACE -x HALOX_ALLOW_NO_MPS)
  set_tests_properties(test_gpu_search_trace_np2 PROPERTIES LABELS "gpu;mpi;dd;emulation"
                       TIMEOUT 900 SKIP_RETURN_CODE 77 PROCESSORS 1
                       ENVIRONMENT "HALOX_ALLOW_NO_MPS=1")
endif()

# The CPU emulation once more with the threads of each block run last-ready-first
# (HALOX_EMU_SCHEDULE=lifo, tests/emu/emu_runtime.cpp): the default order runs every thread of a
# lower index first, so a kernel that reads another thread's write without a barrier between
# them passes there when the writer's index is lower; in this order it is higher. A race of that
# kind fails one of the two runs (test_emu_sched_race below).
if(HALOX_GPU_EMULATE)
  foreach(t test_gpu_update test_gpu_md test_gpu_decomp test_gpu_dd_search test_gpu_nb)
    if(TARGET ${t})
      if(t STREQUAL "test_gpu_update")
        add_test(NAME ${t}_lifo COMMAND ${t})
      else()
        add_test(NAME ${t}_lifo COMMAND ${t} --quick)
      endif()
      set_tests_properties(${t}_lifo PROPERTIES LABELS "gpu;emulation" TIMEOUT 900
                           SKIP_RETURN_CODE 77 ENVIRONMENT "HALOX_EMU_SCHEDULE=lifo")
    endif()
  endforeach()
endif()
# The scheduler itself (tests/emu/test_emu_sched.cpp): barriers, shuffles, counts and ballots
# against the host's sums under both orders; the race above caught with lifo, and a barrier that
# half a block skips ending the process with the emulation's message
if(HALOX_GPU_EMULATE)
  add_executable(test_emu_sched emu/test_emu_sched.cpp)
  target_link_libraries(test_emu_sched PRIVATE halox)
  target_compile_options(test_emu_sched PRIVATE -Wall -Wextra -Wno-unused-parameter)
  add_test(NAME test_emu_sched COMMAND test_emu_sched)
  add_test(NAME test_emu_sched_lifo COMMAND test_emu_sched)
  add_test(NAME test_emu_sched_race
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/expect_failure.sh
                   "k_race: thread [0-9]+ read [0-9]+, want" $<TARGET_FILE:test_emu_sched> --race)
  add_test(NAME test_emu_sched_partial_barrier
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/expect_failure.sh
                   "cannot go on: .* wait at __syncthreads or a warp operation"
                   $<TARGET_FILE:test_emu_sched> --partial-barrier)
  set_tests_properties(test_emu_sched test_emu_sched_lifo test_emu_sched_race
                       test_emu_sched_partial_barrier PROPERTIES LABELS "gpu;emulation"
                       TIMEOUT 60)
  set_tests_properties(test_emu_sched_lifo test_emu_sched_race PROPERTIES
                       ENVIRONMENT "HALOX_EMU_SCHEDULE=lifo")
endif()

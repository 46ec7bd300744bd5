# Test helpers. Every MPI launch in a test runs under a timeout so that a hang fails the test.
#
#   dtf_add_test(NAME <name> COMMAND <cmd...> [TIMEOUT <s>] [LABELS <l...>] [ENVIRONMENT <k=v...>])
#
# Tests that need MPI launch it themselves (through `dtfrun --walltime`, or `timeout mpirun`); the
# environment for running as root, oversubscribed and over loopback TCP is set here once for all tests.
set(DTF_TEST_ENV
  OMPI_ALLOW_RUN_AS_ROOT=1
  OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  OMPI_MCA_oob_tcp_if_include=lo
  OMPI_MCA_btl_tcp_if_include=lo
  OMPI_MCA_rmaps_base_oversubscribe=1
  OMPI_MCA_hwloc_base_binding_policy=none
  DTFTEST_BUILD_DIR=${PROJECT_BINARY_DIR}
  DTFTEST_SOURCE_DIR=${PROJECT_SOURCE_DIR})
# Sanitizer builds: any report fails the test. Leak checking is off because Open MPI and PnetCDF do
# not free everything at exit. TSan: what the uninstrumented Open MPI and PnetCDF do is suppressed
# (tests/tsan.supp), and its deadlock detector is off (its own check fails on PMIx's locking at
# MPI_Finalize; dtf has one lock). Its history is the largest (history_size=7): a suppression
# matches the stack of the earlier access too, and a busy node (CI runs two tests at a time) made an
# earlier access by Open MPI old enough that TSan had no stack left for it, so a buffer that MPI filled
# and dtf freed was reported. The property tests run a quarter of their cases (tests/transfer/prop.py).
if(DTF_SANITIZE)
  list(APPEND DTF_TEST_ENV
    "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:verify_asan_link_order=0"
    "UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1"
    "TSAN_OPTIONS=halt_on_error=1:abort_on_error=1:report_signal_unsafe=0:detect_deadlocks=0:history_size=7:suppressions=${PROJECT_SOURCE_DIR}/tests/tsan.supp"
    XFER_PROP_SCALE=0.25)
endif()

# The Python tests' virtual environment (scripts/setup-python.sh makes it: frontends.python.setup).
set(DTF_VENV "$ENV{HOME}/.cache/dtf/venv" CACHE PATH "virtual environment of the Python tests (scripts/setup-python.sh)")

function(dtf_add_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT;WORKING_DIRECTORY" "COMMAND;LABELS;ENVIRONMENT" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  if(NOT T_WORKING_DIRECTORY)
    set(T_WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  endif()
  add_test(NAME ${T_NAME} COMMAND ${T_COMMAND} WORKING_DIRECTORY ${T_WORKING_DIRECTORY})
  set_tests_properties(${T_NAME} PROPERTIES TIMEOUT ${T_TIMEOUT}
    ENVIRONMENT "${DTF_TEST_ENV};${T_ENVIRONMENT}")
  if(T_LABELS)
    set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}")
  endif()
endfunction()

# The tests under another MPI (tests/mpich, tests/openmpi5): SCRIPT --dir <binary dir> --source <source>
# [--werror] CASE, which builds dtf against that MPI on first use. <label>.build does the builds, alone
# (RUN_SERIAL), before the cases; every test is skipped (status 77) where that MPI is not available.
#
#   dtf_add_other_mpi_tests(<label> <script> <case...>)
function(dtf_add_other_mpi_tests label script)
  set(cmd ${Python3_EXECUTABLE} ${script} --dir ${CMAKE_CURRENT_BINARY_DIR} --source ${PROJECT_SOURCE_DIR})
  if(DTF_WERROR)
    list(APPEND cmd --werror)
  endif()
  dtf_add_test(NAME ${label}.build COMMAND ${cmd} build TIMEOUT 900 LABELS ${label})
  set_tests_properties(${label}.build PROPERTIES SKIP_RETURN_CODE 77 RUN_SERIAL TRUE FIXTURES_SETUP ${label})
  foreach(case ${ARGN})
    dtf_add_test(NAME ${label}.${case} COMMAND ${cmd} ${case} TIMEOUT 300 LABELS ${label})
    set_tests_properties(${label}.${case} PROPERTIES SKIP_RETURN_CODE 77 FIXTURES_REQUIRED ${label})
  endforeach()
endfunction()

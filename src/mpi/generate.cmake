# Generate the MPI_COMM_WORLD wrappers (MPMD mode) from the installed mpi.h at build time (see
# gen_mpi_wrappers.py). Defines DTF_MPI_SOURCES, compiled into libdtf only.
find_file(DTF_MPI_HEADER mpi.h PATHS ${MPI_C_HEADER_DIR} ${MPI_C_INCLUDE_DIRS} NO_DEFAULT_PATH)
if(NOT DTF_MPI_HEADER)
  message(FATAL_ERROR "mpi.h not found in ${MPI_C_HEADER_DIR} ${MPI_C_INCLUDE_DIRS}")
endif()
set(_dtf_mpi_output ${CMAKE_CURRENT_BINARY_DIR}/mpi/mpi_wrappers.c)
add_custom_command(
  OUTPUT ${_dtf_mpi_output}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/mpi
  COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/mpi/gen_mpi_wrappers.py
          --header ${DTF_MPI_HEADER} --out ${_dtf_mpi_output}
  DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/mpi/gen_mpi_wrappers.py ${CMAKE_CURRENT_SOURCE_DIR}/mpi/world.h ${DTF_MPI_HEADER}
  COMMENT "Generating MPI_COMM_WORLD wrappers from ${DTF_MPI_HEADER}"
  VERBATIM)
set(DTF_MPI_SOURCES ${_dtf_mpi_output})

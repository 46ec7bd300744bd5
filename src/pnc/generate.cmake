# Generate the ncmpi_* wrappers from the installed pnetcdf.h at build time (see gen_wrappers.py).
# Defines DTF_PNC_SOURCES (to compile into libdtf) and DTF_PNC_GENERATED_DIR (to add to the include
# path of anything that includes pnc/hook.h). Target dtf_pnc_generated builds just the files.
set(DTF_PNC_GENERATED_DIR ${CMAKE_CURRENT_BINARY_DIR}/pnc)
set(_dtf_pnc_outputs
  ${DTF_PNC_GENERATED_DIR}/pnc_ids.h
  ${DTF_PNC_GENERATED_DIR}/pnc_info.h
  ${DTF_PNC_GENERATED_DIR}/pnc_table.c
  ${DTF_PNC_GENERATED_DIR}/pnc_wrappers.c)
add_custom_command(
  OUTPUT ${_dtf_pnc_outputs}
  COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/pnc/gen_wrappers.py
          --header ${PNETCDF_HEADER_DIR}/pnetcdf.h --outdir ${DTF_PNC_GENERATED_DIR}
  DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/pnc/gen_wrappers.py ${CMAKE_CURRENT_SOURCE_DIR}/pnc/hook.h
          ${PNETCDF_HEADER_DIR}/pnetcdf.h
  COMMENT "Generating ncmpi_* wrappers from ${PNETCDF_HEADER_DIR}/pnetcdf.h"
  VERBATIM)
add_custom_target(dtf_pnc_generated DEPENDS ${_dtf_pnc_outputs})
set(DTF_PNC_SOURCES ${_dtf_pnc_outputs})

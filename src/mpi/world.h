/* The MPMD mode's MPI_COMM_WORLD (mpmd.hpp): while it is on, MPI_COMM_WORLD in the program's MPI
 * calls stands for its component's communicator. Read by the wrappers that gen_mpi_wrappers.py
 * generates from mpi.h; set once, inside MPI_Init, before any other thread of dtf runs. */
#pragma once

#include <mpi.h>

#include "common/export.hpp" // DTF_API: the generated wrappers are exported

#ifdef __cplusplus
extern "C" {
#endif

extern int dtf_world_on_;
extern MPI_Comm dtf_world_comm_;      /* the component's communicator */
extern MPI_Fint dtf_world_fint_;      /* its Fortran handle */
extern MPI_Fint dtf_world_real_fint_; /* the Fortran handle of the real MPI_COMM_WORLD */

static inline MPI_Comm dtf_world_(MPI_Comm comm) {
    return dtf_world_on_ && comm == MPI_COMM_WORLD ? dtf_world_comm_ : comm;
}

/* A Fortran communicator argument (a pointer to the handle, or to mpi_f08's type(MPI_Comm)). */
static inline void *dtf_world_f_(void *comm) {
    return dtf_world_on_ && comm && *(const MPI_Fint *)comm == dtf_world_real_fint_ ? (void *)&dtf_world_fint_ : comm;
}

/* The next library's definition of `name` (dlsym(RTLD_NEXT)), looked up once into *cache. When
 * there is none, says so on stderr and sets *ierr (a Fortran MPI_Fint *, may be null) to
 * MPI_ERR_OTHER, and returns null. */
void *dtf_mpi_next_(void **cache, const char *name, void *ierr);

#ifdef __cplusplus
}
#endif

// One mpirun for all components (MPMD: `mpirun -n 4 ./model : -n 8 ./assim`, as the original DTF
// runs them), each program believing MPI_COMM_WORLD is its own. Inside MPI_Init dtf splits the
// world by application context (MPI_APPNUM, or DTF_APPNUM where the launcher sets it per program:
// srun --multi-prog gives every rank MPI_APPNUM 0; one context per component) and from then on the
// generated MPI wrappers (gen_mpi_wrappers.py, world.h) hand the component's communicator to every
// MPI call of the program, and of the libraries it uses, that names MPI_COMM_WORLD, in C and
// Fortran. The inter-communicators between the contexts are made there too, while every process of
// the launch is inside MPI_Init, so that connecting later cannot hang; the runtime learns which
// component runs in which context when it connects (Runtime::connect_peers). Inside one launch Open
// MPI moves the data through shared memory between ranks of one node.
#pragma once

#include <mpi.h>

#include <map>

namespace dtf::mpmd {

// Inside MPI_Init / MPI_Init_thread, after MPI's own initialization (mpi_init.cpp). The mode is on
// with DTF_MPMD=1, or, unless DTF_MPMD=0, when DTF_APPNUM is set or Open MPI says the launch has
// several application contexts (OMPI_NUM_APP_CTX). Returns MPI_SUCCESS or the failing call's MPI
// error (reported).
int setup();
bool active();
// This process's application context (0 when the mode is off), and where it comes from
// ("DTF_APPNUM" or "MPI_APPNUM").
int context();
const char *context_source();
// An inter-communicator to every other application context of the launch, by context (local group:
// this component; remote group: that context's processes). Owned here, for the whole run.
const std::map<int, MPI_Comm> &links();

} // namespace dtf::mpmd

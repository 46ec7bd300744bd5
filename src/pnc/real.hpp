// The real PnetCDF functions behind dtf's wrappers (hook.h), for dtf's own calls of them.
#pragma once

#include "common/error.hpp"
#include "pnc/hook.h"
#include "transport/mpi_util.hpp"

namespace dtf::pnc {

// The real PnetCDF function `fn` as a pointer of type Fn; DTF_ERR_INTERNAL naming it if the program
// was not linked so that dtf finds it.
template <class Fn> Fn real(int fn) {
    void *p = dtf_pnc_real(fn);
    if (!p)
        fail(DTF_ERR_INTERNAL,
             "the real PnetCDF function %s was not found: link the program with -ldtf before -lpnetcdf, or "
             "LD_PRELOAD libdtf.so into a program linked with PnetCDF",
             dtf_pnc_name(fn));
    return reinterpret_cast<Fn>(p);
}

// Call the real PnetCDF function `fn` (of type Fn) without the runtime lock: it may wait in MPI for
// other ranks. Returns its code.
template <class Fn, class... A> int call_real(int fn, A... args) {
    const Fn f = real<Fn>(fn);
    transport::Blocking unlocked;
    return f(args...);
}

} // namespace dtf::pnc

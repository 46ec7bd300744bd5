/*
 * The contract between the generated ncmpi_* wrappers (pnc_wrappers.c, generated from the installed
 * pnetcdf.h by gen_wrappers.py) and the dtf runtime.
 *
 * Every generated wrapper is one line: if dtf may care about the call, it packs pointers to its
 * arguments into an array and calls one dispatch entry point with the function's id; the dispatcher
 * either handles the call and returns its result, or returns DTF_PNC_PASS and the wrapper calls the
 * real PnetCDF function found with dlsym(RTLD_NEXT, name).
 *
 * Cost on files dtf does not handle: one load of dtf_pnc_active_ (zero until dtf_init finds a file
 * rule for this component), and for ncid calls one table lookup.
 */
#ifndef DTF_PNC_HOOK_H
#define DTF_PNC_HOOK_H

#include "pnc_ids.h" /* generated: enum dtf_pnc_fn { DTF_FN_ncmpi_create, ..., DTF_FN_COUNT_ } */

#ifdef __cplusplus
extern "C" {
#endif

/* Returned by a dispatcher that leaves the call to the real PnetCDF. Positive, so never a PnetCDF code. */
#define DTF_PNC_PASS 0x7ff0dead

/* Nonzero while dtf handles at least one file pattern for this component (set by dtf_init). */
extern int dtf_pnc_active_;

/* ncids that dtf tracks (file-mode files it opened for the user; later the virtual files of transfer
 * mode, whose ncids lie at and above DTF_PNC_VIRTUAL_BASE and never collide with PnetCDF's, which are
 * below NC_MAX_NFILES). */
#define DTF_PNC_OWNED_MAX 4096
#define DTF_PNC_VIRTUAL_BASE 0x40000000
extern unsigned char dtf_pnc_owned_[DTF_PNC_OWNED_MAX];
static inline int dtf_pnc_owns(int ncid) {
    if (ncid >= DTF_PNC_VIRTUAL_BASE) return 1;
    return ncid >= 0 && ncid < DTF_PNC_OWNED_MAX &&
           __atomic_load_n(&dtf_pnc_owned_[ncid], __ATOMIC_ACQUIRE);
}

/* Dispatch entry points (implemented by the runtime). args[i] points to the i-th parameter, so args[0]
 * is the ncid or the communicator/path parameter itself; a function with two ncids (ncmpi_copy_att)
 * passes the one dtf owns. PnetCDF calls some of its own public functions from inside others (e.g.
 * ncmpi_open calls ncmpi_inq_file_format): the dispatchers see those calls too and must pass them on. */
int dtf_pnc_path_call(int fn, void **args);          /* create, open, delete, inq_file_format */
int dtf_pnc_ncid_call(int fn, int ncid, void **args); /* any call whose first parameter is an ncid */

/* The real PnetCDF function of id `fn` (dlsym(RTLD_NEXT) once, then cached); NULL if not found,
 * with the reason in dtf_errmsg(). */
void *dtf_pnc_real(int fn);
/* Name of the function of id `fn`. */
const char *dtf_pnc_name(int fn);

#define DTF_PNC_LIKELY_(x) __builtin_expect(!!(x), 1)
#define DTF_PNC_UNLIKELY_(x) __builtin_expect(!!(x), 0)

/* Used in generated wrappers of functions returning int. */
#define DTF_PNC_HOOK_PATH(fn, ...)                                                                  \
    do {                                                                                            \
        if (DTF_PNC_UNLIKELY_(__atomic_load_n(&dtf_pnc_active_, __ATOMIC_RELAXED))) {               \
            void *dtf_args_[] = {__VA_ARGS__};                                                      \
            int dtf_r_ = dtf_pnc_path_call((fn), dtf_args_);                                        \
            if (dtf_r_ != DTF_PNC_PASS) return dtf_r_;                                              \
        }                                                                                           \
    } while (0)

#define DTF_PNC_HOOK_NCID(fn, ncid, ...)                                                            \
    do {                                                                                            \
        if (DTF_PNC_UNLIKELY_(__atomic_load_n(&dtf_pnc_active_, __ATOMIC_RELAXED)) &&               \
            dtf_pnc_owns(ncid)) {                                                                   \
            void *dtf_args_[] = {__VA_ARGS__};                                                      \
            int dtf_r_ = dtf_pnc_ncid_call((fn), (ncid), dtf_args_);                                \
            if (dtf_r_ != DTF_PNC_PASS) return dtf_r_;                                              \
        }                                                                                           \
    } while (0)

#ifdef __cplusplus
}
#endif

#endif /* DTF_PNC_HOOK_H */

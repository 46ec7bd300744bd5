/*
 * The DTF-compatible Fortran externals, callable without a module:
 *
 *     external dtf_init, dtf_transfer, dtf_finalize     ! optional
 *     call dtf_init(config_file, component_name, ierr)
 *     call dtf_transfer(filename, ncid, ierr)
 *     call dtf_finalize(ierr)
 *
 * gfortran passes CHARACTER arguments as a pointer plus a hidden length (size_t) after the other
 * arguments. Strings may be blank-padded or end in char(0).
 */
#include <stdlib.h>
#include <string.h>

#include "common/export.hpp"
#include "dtf.h"

/* A NUL-terminated copy of a Fortran string without trailing blanks; NULL when out of memory. */
static char *fortran_string(const char *s, size_t len) {
    const char *nul = s ? memchr(s, '\0', len) : NULL;
    if (nul) len = (size_t)(nul - s);
    while (len > 0 && s[len - 1] == ' ') --len;
    char *out = malloc(len + 1);
    if (!out) return NULL;
    if (len) memcpy(out, s, len);
    out[len] = '\0';
    return out;
}

DTF_API void dtf_init_(const char *config, const char *component, int *ierr, size_t config_len,
                       size_t component_len) {
    char *c = fortran_string(config, config_len), *n = fortran_string(component, component_len);
    int rc = (c && n) ? dtf_init(c, n) : DTF_ERR_NOMEM;
    free(c);
    free(n);
    if (ierr) *ierr = rc;
}

DTF_API void dtf_transfer_(const char *filename, const int *ncid, int *ierr, size_t filename_len) {
    char *f = fortran_string(filename, filename_len);
    int rc = f ? dtf_transfer(f, ncid ? *ncid : -1) : DTF_ERR_NOMEM;
    free(f);
    if (ierr) *ierr = rc;
}

DTF_API void dtf_finalize_(int *ierr) {
    int rc = dtf_finalize();
    if (ierr) *ierr = rc;
}

/*
 * Which library do the ncmpi_* symbols of this process resolve to?
 *
 *   pnc_probe dtf        assert that they resolve to libdtf (linked first or LD_PRELOADed), that
 *                        the wrappers forward to the real PnetCDF, and that ncmpi_strerror /
 *                        ncmpi_strerrno know dtf's error codes
 *   pnc_probe pnetcdf    assert that they resolve to libpnetcdf (the control case)
 *
 * Needs no MPI_Init: only symbol lookups and error-text functions are called.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pnetcdf.h>
#include <stdio.h>
#include <string.h>

#include "dtf.h"

static int failures;
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL: " __VA_ARGS__);                                                 \
            fputc('\n', stderr);                                                                   \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* Base name of the object that defines `sym` as seen from the global scope. */
static const char *owner(const char *sym) {
    Dl_info info;
    void *p = dlsym(RTLD_DEFAULT, sym);
    if (!p || !dladdr(p, &info) || !info.dli_fname) return "(none)";
    const char *slash = strrchr(info.dli_fname, '/');
    return slash ? slash + 1 : info.dli_fname;
}

int main(int argc, char **argv) {
    if (argc != 2 || (strcmp(argv[1], "dtf") && strcmp(argv[1], "pnetcdf"))) {
        fprintf(stderr, "usage: pnc_probe dtf|pnetcdf\n");
        return 2;
    }
    const char *want = strcmp(argv[1], "dtf") ? "libpnetcdf.so" : "libdtf.so";
    static const char *const syms[] = {"ncmpi_create", "ncmpi_open", "ncmpi_put_vara_double_all",
                                       "ncmpi_iget_varn_ulonglong", "ncmpi_wait_all", "ncmpi_strerror",
                                       "ncmpi_inq_libvers", "ncmpi_mput_varm_all"};
    for (size_t i = 0; i < sizeof syms / sizeof *syms; i++) {
        const char *o = owner(syms[i]);
        printf("%-28s -> %s\n", syms[i], o);
        CHECK(strncmp(o, want, strlen(want)) == 0, "%s resolves to %s, expected %s", syms[i], o, want);
    }
    if (strcmp(argv[1], "dtf") == 0) {
        /* The real PnetCDF, looked up in libpnetcdf itself. */
        void *lib = dlopen("libpnetcdf.so", RTLD_NOW | RTLD_NOLOAD);
        if (!lib) lib = dlopen("libpnetcdf.so.0", RTLD_NOW | RTLD_NOLOAD);
        CHECK(lib != NULL, "libpnetcdf is not loaded: %s", dlerror());
        if (lib) {
            const char *(*real_strerror)(int) = (const char *(*)(int))dlsym(lib, "ncmpi_strerror");
            const char *(*real_libvers)(void) = (const char *(*)(void))dlsym(lib, "ncmpi_inq_libvers");
            CHECK(real_strerror && real_libvers, "ncmpi_strerror/ncmpi_inq_libvers not in libpnetcdf");
            if (real_strerror && real_libvers) {
                CHECK(strcmp(ncmpi_strerror(NC_EBADID), real_strerror(NC_EBADID)) == 0,
                      "ncmpi_strerror(NC_EBADID) not forwarded");
                CHECK(strcmp(ncmpi_inq_libvers(), real_libvers()) == 0, "ncmpi_inq_libvers not forwarded");
            }
        }
        CHECK(strcmp(ncmpi_strerrno(NC_EBADID), "NC_EBADID") == 0, "ncmpi_strerrno(NC_EBADID) = %s",
              ncmpi_strerrno(NC_EBADID));
        /* dtf codes: the generic messages and names of dtf.h's error table. */
#define DTF_PROBE_ROW_(name, value, message)                                                       \
        if ((value) != 0) {                                                                        \
            CHECK(strcmp(ncmpi_strerror(value), message) == 0, "ncmpi_strerror(%d) = %s", value,   \
                  ncmpi_strerror(value));                                                          \
            CHECK(strcmp(ncmpi_strerrno(value), #name) == 0, "ncmpi_strerrno(%d) = %s", value,     \
                  ncmpi_strerrno(value));                                                          \
        }
        DTF_ERROR_TABLE(DTF_PROBE_ROW_)
#undef DTF_PROBE_ROW_
        printf("ncmpi_strerror(%d) = %s\n", DTF_ERR_TIMEOUT, ncmpi_strerror(DTF_ERR_TIMEOUT));
    }
    printf(failures ? "FAILED\n" : "OK\n");
    return failures ? 1 : 0;
}

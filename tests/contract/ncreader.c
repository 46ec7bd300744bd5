/*
 * A generic reader of netCDF files through PnetCDF, written without knowing who wrote them: every
 * dimension, attribute and variable of each file, each variable's values read split along its first
 * dimension over the ranks (a block each; a scalar by every rank). Each rank writes what it saw to
 * OUT.<rank>: the format, the header's sizes, every inquiry result, every value, and the return code of
 * every call (as ncmpi_strerrno names it). The contract tests run it after a writer on a plain file
 * (the oracle) and beside the same writer under dtf, and compare the two dumps byte for byte.
 *
 * usage: ncreader [-a coll|indep|nb] OUT FILE...
 *   -a  how the values are read: ncmpi_get_vara_<type>_all (coll, the default), the independent
 *       ncmpi_get_vara_<type> between begin_indep_data and end_indep_data (indep), or
 *       ncmpi_iget_vara_<type> for every variable, then one ncmpi_wait_all (nb)
 * Buffers start as zeros, so that elements PnetCDF reads beyond the end of a file (it leaves them as
 * they are) read as zeros in every run. Exit status: 0 when every call succeeded, 1 when one failed
 * (the dump says which), 2 on a usage error.
 */
#include <mpi.h>
#include <pnetcdf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static FILE *out;
static int failed;

static void say(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfprintf(out, fmt, ap);
    va_end(ap);
}

/* Records a call's return code; true when it succeeded. */
static int ok(int err, const char *call) {
    if (err == NC_NOERR) return 1;
    say("%s: %s\n", call, ncmpi_strerrno(err));
    failed = 1;
    return 0;
}

static size_t type_size(nc_type t) {
    switch (t) {
    case NC_BYTE: case NC_CHAR: case NC_UBYTE: return 1;
    case NC_SHORT: case NC_USHORT: return 2;
    case NC_INT: case NC_UINT: case NC_FLOAT: return 4;
    default: return 8;
    }
}

/* n values of type t, space separated (chars as a quoted string with escapes). */
static void values(nc_type t, const void *p, MPI_Offset n) {
    if (t == NC_CHAR) {
        say("\"");
        for (MPI_Offset i = 0; i < n; ++i) {
            unsigned char c = ((const unsigned char *)p)[i];
            if (c >= 32 && c < 127 && c != '"' && c != '\\') say("%c", c);
            else say("\\x%02x", c);
        }
        say("\"");
        return;
    }
    for (MPI_Offset i = 0; i < n; ++i) {
        say(i ? " " : "");
        switch (t) {
        case NC_BYTE: say("%d", ((const signed char *)p)[i]); break;
        case NC_UBYTE: say("%u", ((const unsigned char *)p)[i]); break;
        case NC_SHORT: say("%d", ((const short *)p)[i]); break;
        case NC_USHORT: say("%u", ((const unsigned short *)p)[i]); break;
        case NC_INT: say("%d", ((const int *)p)[i]); break;
        case NC_UINT: say("%u", ((const unsigned *)p)[i]); break;
        case NC_FLOAT: say("%.9g", ((const float *)p)[i]); break;
        case NC_DOUBLE: say("%.17g", ((const double *)p)[i]); break;
        case NC_INT64: say("%lld", ((const long long *)p)[i]); break;
        case NC_UINT64: say("%llu", ((const unsigned long long *)p)[i]); break;
        default: say("?"); break;
        }
    }
}

static void attributes(int ncid, int varid, int natts) {
    for (int i = 0; i < natts; ++i) {
        char name[NC_MAX_NAME + 1] = "";
        nc_type t = NC_NAT;
        MPI_Offset len = 0;
        if (!ok(ncmpi_inq_attname(ncid, varid, i, name), "inq_attname")) continue;
        if (!ok(ncmpi_inq_att(ncid, varid, name, &t, &len), "inq_att")) continue;
        void *buf = calloc((size_t)len + 1, type_size(t));
        say("  att %s type %d len %lld: ", name, t, (long long)len);
        if (ok(ncmpi_get_att(ncid, varid, name, buf), "get_att")) values(t, buf, len);
        say("\n");
        free(buf);
    }
}

/* The typed get (or iget) of type t: collective, independent or nonblocking. */
static int get(int ncid, int varid, nc_type t, const MPI_Offset *start, const MPI_Offset *count, void *buf,
               char access, int *req) {
#define GET(suffix, ctype)                                                                          \
    return access == 'c' ? ncmpi_get_vara_##suffix##_all(ncid, varid, start, count, (ctype *)buf)   \
         : access == 'i' ? ncmpi_get_vara_##suffix(ncid, varid, start, count, (ctype *)buf)         \
                         : ncmpi_iget_vara_##suffix(ncid, varid, start, count, (ctype *)buf, req)
    switch (t) {
    case NC_BYTE: GET(schar, signed char);
    case NC_CHAR: GET(text, char);
    case NC_SHORT: GET(short, short);
    case NC_INT: GET(int, int);
    case NC_FLOAT: GET(float, float);
    case NC_DOUBLE: GET(double, double);
    case NC_UBYTE: GET(uchar, unsigned char);
    case NC_USHORT: GET(ushort, unsigned short);
    case NC_UINT: GET(uint, unsigned int);
    case NC_INT64: GET(longlong, long long);
    case NC_UINT64: GET(ulonglong, unsigned long long);
    default: return NC_EBADTYPE;
    }
#undef GET
}

struct Var {
    char name[NC_MAX_NAME + 1];
    nc_type type;
    int ndims;
    MPI_Offset *start, *count, n;
    void *buf;
    int req, rc;
};

static void read_file(const char *path, char access, int rank, int nprocs) {
    int ncid = -1, format = 0, ndims = 0, nvars = 0, natts = 0, unlim = -1;
    say("file %s\n", path);
    if (!ok(ncmpi_open(MPI_COMM_WORLD, path, NC_NOWRITE, MPI_INFO_NULL, &ncid), "open")) return;
    if (ok(ncmpi_inq_format(ncid, &format), "inq_format")) say("format %d\n", format);
    MPI_Offset size = 0, extent = 0;
    if (ok(ncmpi_inq_header_size(ncid, &size), "inq_header_size") &&
        ok(ncmpi_inq_header_extent(ncid, &extent), "inq_header_extent"))
        say("header size %lld extent %lld\n", (long long)size, (long long)extent);
    if (ok(ncmpi_inq(ncid, &ndims, &nvars, &natts, &unlim), "inq"))
        say("ndims %d nvars %d natts %d unlimdim %d\n", ndims, nvars, natts, unlim);
    MPI_Offset *lens = calloc((size_t)ndims + 1, sizeof *lens);
    for (int d = 0; d < ndims; ++d) {
        char name[NC_MAX_NAME + 1] = "";
        if (ok(ncmpi_inq_dim(ncid, d, name, &lens[d]), "inq_dim")) say("dim %d %s %lld\n", d, name, (long long)lens[d]);
    }
    say("global attributes\n");
    attributes(ncid, NC_GLOBAL, natts);
    struct Var *vars = calloc((size_t)nvars + 1, sizeof *vars);
    for (int v = 0; v < nvars; ++v) {
        struct Var *x = &vars[v];
        int vnatts = 0, no_fill = 0;
        char fill[8] = {0};
        x->ndims = -1;
        if (!ok(ncmpi_inq_varndims(ncid, v, &x->ndims), "inq_varndims")) continue;
        int *dimids = calloc((size_t)x->ndims + 1, sizeof *dimids);
        x->start = calloc((size_t)x->ndims + 1, sizeof *x->start);
        x->count = calloc((size_t)x->ndims + 1, sizeof *x->count);
        if (!ok(ncmpi_inq_var(ncid, v, x->name, &x->type, &x->ndims, dimids, &vnatts), "inq_var")) {
            x->ndims = -1;
            free(dimids);
            continue;
        }
        MPI_Offset offset = 0;
        ok(ncmpi_inq_varoffset(ncid, v, &offset), "inq_varoffset");
        say("var %d %s type %d offset %lld dims", v, x->name, x->type, (long long)offset);
        x->n = 1;
        for (int d = 0; d < x->ndims; ++d) {
            const MPI_Offset len = lens[dimids[d]];
            say(" %d", dimids[d]);
            x->start[d] = 0;
            x->count[d] = len;
            if (d == 0) { /* a block of the first dimension for each rank */
                const MPI_Offset base = len / nprocs, extra = len % nprocs;
                x->start[0] = rank * base + (rank < extra ? rank : extra);
                x->count[0] = base + (rank < extra ? 1 : 0);
            }
            x->n *= x->count[d];
        }
        if (ok(ncmpi_inq_var_fill(ncid, v, &no_fill, fill), "inq_var_fill")) {
            say(" no_fill %d fill ", no_fill);
            values(x->type, fill, 1);
        }
        say("\n");
        free(dimids);
        attributes(ncid, v, vnatts);
    }
    if (access == 'i') ok(ncmpi_begin_indep_data(ncid), "begin_indep_data");
    for (int v = 0; v < nvars; ++v) {
        struct Var *x = &vars[v];
        if (x->ndims < 0) continue;
        x->buf = calloc((size_t)x->n + 1, type_size(x->type));
        x->req = NC_REQ_NULL;
        x->rc = get(ncid, v, x->type, x->start, x->count, x->buf, access, &x->req);
    }
    if (access == 'n') {
        int *reqs = calloc((size_t)nvars + 1, sizeof *reqs), *st = calloc((size_t)nvars + 1, sizeof *st), n = 0;
        for (int v = 0; v < nvars; ++v)
            if (vars[v].ndims >= 0 && vars[v].rc == NC_NOERR) reqs[n++] = vars[v].req;
        ok(ncmpi_wait_all(ncid, n, reqs, st), "wait_all");
        n = 0;
        for (int v = 0; v < nvars; ++v)
            if (vars[v].ndims >= 0 && vars[v].rc == NC_NOERR) vars[v].rc = st[n++];
        free(reqs);
        free(st);
    }
    if (access == 'i') ok(ncmpi_end_indep_data(ncid), "end_indep_data");
    for (int v = 0; v < nvars; ++v) {
        struct Var *x = &vars[v];
        if (x->ndims < 0) continue;
        say("data %s [", x->name);
        for (int d = 0; d < x->ndims; ++d) say("%s%lld:%lld", d ? "," : "", (long long)x->start[d], (long long)x->count[d]);
        say("]: ");
        if (ok(x->rc, "get")) values(x->type, x->buf, x->n);
        say("\n");
        free(x->buf);
    }
    for (int v = 0; v < nvars; ++v) free(vars[v].start), free(vars[v].count);
    free(vars);
    free(lens);
    ok(ncmpi_close(ncid), "close");
}

int main(int argc, char **argv) {
    int rank = 0, nprocs = 1, first = 1;
    char access = 'c';
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc > 2 && !strcmp(argv[1], "-a")) {
        access = !strcmp(argv[2], "indep") ? 'i' : !strcmp(argv[2], "nb") ? 'n' : !strcmp(argv[2], "coll") ? 'c' : 0;
        first = 3;
    }
    if (!access || argc < first + 2) {
        if (rank == 0) fprintf(stderr, "usage: ncreader [-a coll|indep|nb] OUT FILE...\n");
        MPI_Finalize();
        return 2;
    }
    char name[4096];
    snprintf(name, sizeof name, "%s.%d", argv[first], rank);
    out = fopen(name, "w");
    if (!out) {
        fprintf(stderr, "ncreader: cannot write %s\n", name);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int i = first + 1; i < argc; ++i) read_file(argv[i], access, rank, nprocs);
    fclose(out);
    MPI_Finalize();
    return failed;
}

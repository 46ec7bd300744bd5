/*
 * The netCDF-4 data model as netCDF-C answers it, for a writer and a reader of one netCDF-4 file in
 * parallel (nc_create_par, nc_open_par; no dtf call anywhere): storage hints, fill values, types,
 * attributes, define mode, groups and every inquiry on them.
 *   writer  makes the same calls on DIR/front.nc and on a diskless netCDF-4 file of its own (real
 *           netCDF-C and HDF5, which dtf never serves), checking that each returns what it returns
 *           there and that every inquiry answers alike: before enddef, after it, after a variable
 *           defined in data mode (NC_NETCDF4 enters define mode by itself; the classic model refuses)
 *           and after it wrote its row blocks; then a variable defined after the values, and
 *           DIR/classic.nc, a CDF-5 file (a definition, no values)
 *   reader  opens DIR/front.nc, writes every inquiry's answer and every value of every variable
 *           (fill values where nothing was written), m's rows in every memory type (read_typed),
 *           then DIR/classic.nc's format, mode and numbers,
 *           to NCPAIR_DUMP.<rank> as text: the test compares it
 *           with the same programs run on a plain file
 * The reader prints "nc4model reader: dumped" (it checks nothing itself: frontends.py compares the dumps);
 * exit status 1 on a difference (writer), 2 on an error.
 *
 * usage: nc4model writer|reader nc DIR netcdf4|netcdf4-classic ACCESS (ACCESS: as ncpair's, unused)
 */
#include <mpi.h>
#include <netcdf.h>
#include <netcdf_filter.h>
#include <netcdf_par.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NY = 6, NX = 5, NZ = 4, NBIG = 1500, NREC = 2 };

static void check(int err, const char *call) {
    if (err == NC_NOERR) return;
    fprintf(stderr, "nc4model: %s failed: %s\n", call, nc_strerror(err));
    MPI_Abort(MPI_COMM_WORLD, 2);
}
#define NC(call) check((call), #call)

/* A description of a file, line by line. */
typedef struct {
    char *text;
    size_t len, cap;
} Text;
static void add(Text *t, const char *fmt, ...) {
    va_list ap;
    char line[4096];
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (t->len + (size_t)n + 1 > t->cap) {
        t->cap = 2 * (t->len + (size_t)n + 1);
        t->text = realloc(t->text, t->cap);
    }
    memcpy(t->text + t->len, line, (size_t)n + 1);
    t->len += (size_t)n;
}

/* The definitions, on either file: each call's return code goes to `rc` (compared, not checked). */
static void define(int ncid, int classic, Text *rc) {
    int d[6], v;
    size_t chunks[3] = {2, 3, 5};
    const int fill = -7;
    add(rc, "title %d\n", nc_put_att_text(ncid, NC_GLOBAL, "title", 8, "nc4model"));
    add(rc, "time %d\n", nc_def_dim(ncid, "time", NC_UNLIMITED, &d[0]));
    add(rc, "z %d\n", nc_def_dim(ncid, "z", NZ, &d[1]));
    add(rc, "y %d\n", nc_def_dim(ncid, "y", NY, &d[2]));
    add(rc, "x %d\n", nc_def_dim(ncid, "x", NX, &d[3]));
    add(rc, "big %d\n", nc_def_dim(ncid, "big", NBIG, &d[4]));
    if (classic) add(rc, "second unlimited %d\n", nc_def_dim(ncid, "time2", NC_UNLIMITED, &d[5]));
    add(rc, "a %d\n", nc_def_var(ncid, "a", NC_FLOAT, 4, d, &v));
    add(rc, "a deflate %d\n", nc_def_var_deflate(ncid, v, 1, 1, 3));
    add(rc, "a contiguous %d\n", nc_def_var_chunking(ncid, v, NC_CONTIGUOUS, NULL));
    add(rc, "a units %d\n", nc_put_att_text(ncid, v, "units", 1, "K"));
    add(rc, "b %d\n", nc_def_var(ncid, "b", NC_DOUBLE, 3, d + 1, &v));
    add(rc, "c %d\n", nc_def_var(ncid, "c", NC_INT, 1, d, &v));
    add(rc, "s %d\n", nc_def_var(ncid, "s", NC_SHORT, 0, d, &v));
    add(rc, "e %d\n", nc_def_var(ncid, "e", NC_FLOAT, 2, d + 2, &v));
    add(rc, "e fletcher32 %d\n", nc_def_var_fletcher32(ncid, v, 1));
    add(rc, "e deflate %d\n", nc_def_var_deflate(ncid, v, 1, 1, 1));
    add(rc, "g %d\n", nc_def_var(ncid, "g", NC_DOUBLE, 3, d + 1, &v));
    add(rc, "g chunks %d\n", nc_def_var_chunking(ncid, v, NC_CHUNKED, chunks));
    add(rc, "g endian %d\n", nc_def_var_endian(ncid, v, NC_ENDIAN_BIG));
    int hb[2] = {d[4], d[4]};
    add(rc, "h %d\n", nc_def_var(ncid, "h", NC_DOUBLE, 2, hb, &v));
    add(rc, "h deflate %d\n", nc_def_var_deflate(ncid, v, 0, 1, 9));
    add(rc, "i %d\n", nc_def_var(ncid, "i", NC_INT, 2, d + 2, &v));
    add(rc, "i fill %d\n", nc_def_var_fill(ncid, v, 0, &fill));
    add(rc, "i default chunks %d\n", nc_def_var_chunking(ncid, v, NC_CHUNKED, NULL));
    add(rc, "n %d\n", nc_def_var(ncid, "n", NC_INT, 1, d + 3, &v));
    add(rc, "n fill %d\n", nc_def_var_fill(ncid, v, 0, &fill));
    add(rc, "n no fill %d\n", nc_def_var_fill(ncid, v, 1, NULL)); /* (netCDF-4 deletes its _FillValue then) */
    int old = -1; /* (netCDF-4's file fill mode: for the variables defined after it only) */
    add(rc, "nofill %d", nc_set_fill(ncid, NC_NOFILL, &old)), add(rc, " old %d\n", old);
    add(rc, "u %d\n", nc_def_var(ncid, "u", NC_UBYTE, 2, (int[]){d[0], d[3]}, &v));
    add(rc, "fill %d", nc_set_fill(ncid, NC_FILL, &old)), add(rc, " old %d\n", old);
    add(rc, "p %d\n", nc_def_var(ncid, "p", NC_FLOAT, 3, (int[]){d[0], d[2], d[3]}, &v));
    add(rc, "m %d\n", nc_def_var(ncid, "m", NC_INT, 2, d + 2, &v)); /* (written from six memory types) */
    add(rc, "t %d\n", nc_def_var(ncid, "t", NC_CHAR, 1, d + 3, &v));
    add(rc, "group %d\n", classic ? nc_def_grp(ncid, "g1", &v) : 0);
}

/* Every inquiry's answer on the file (the mode flags of a diskless or parallel file left out). */
static void describe(int ncid, Text *t) {
    int fmt, fx, mode, ndims, nvars, natts, unlim, n, ids[64], ngrps;
    size_t len;
    char name[NC_MAX_NAME + 1];
    NC(nc_inq_format(ncid, &fmt));
    NC(nc_inq_format_extended(ncid, &fx, &mode));
    add(t, "format %d %d mode %#x\n", fmt, fx, mode & ~(NC_DISKLESS | NC_INMEMORY | NC_PERSIST | NC_MPIIO | NC_WRITE));
    NC(nc_inq(ncid, &ndims, &nvars, &natts, &unlim));
    add(t, "dims %d vars %d atts %d unlimited %d\n", ndims, nvars, natts, unlim);
    NC(nc_inq_unlimdims(ncid, &n, ids));
    add(t, "unlimdims %d\n", n);
    NC(nc_inq_grps(ncid, &ngrps, NULL));
    NC(nc_inq_grpname(ncid, name));
    add(t, "groups %d name %s parent %d\n", ngrps, name, nc_inq_grp_parent(ncid, &n));
    NC(nc_inq_typeids(ncid, &n, NULL));
    nc_type type;
    add(t, "types %d typeid(double) %d\n", n, nc_inq_typeid(ncid, "double", &type) == NC_NOERR ? type : -1);
    for (int dim = 0; dim < ndims; dim++) {
        NC(nc_inq_dim(ncid, dim, name, &len));
        add(t, "dim %d %s %zu\n", dim, name, len);
    }
    for (int a = 0; a < natts; a++) {
        NC(nc_inq_attname(ncid, NC_GLOBAL, a, name));
        NC(nc_inq_att(ncid, NC_GLOBAL, name, &type, &len));
        add(t, "global att %s type %d len %zu\n", name, type, len);
    }
    for (int v = 0; v < nvars; v++) {
        int nd, dims[8], st, shuffle, deflate, level, fl, endian, nofill, qm, nsd;
        size_t ch[8] = {0}, nf, np, cs, ne;
        unsigned fids[8], params[8];
        float pre;
        double fillv = 0;
        NC(nc_inq_var(ncid, v, name, &type, &nd, dims, &natts));
        add(t, "var %s type %d ndims %d atts %d dims", name, type, nd, natts);
        for (int k = 0; k < nd; k++) add(t, " %d", dims[k]);
        NC(nc_inq_var_chunking(ncid, v, &st, ch));
        add(t, "\n  storage %d chunks", st);
        for (int k = 0; k < nd; k++) add(t, " %zu", ch[k]);
        NC(nc_inq_var_deflate(ncid, v, &shuffle, &deflate, &level));
        NC(nc_inq_var_fletcher32(ncid, v, &fl));
        NC(nc_inq_var_endian(ncid, v, &endian));
        add(t, "\n  shuffle %d deflate %d level %d fletcher32 %d endian %d\n", shuffle, deflate, level, fl, endian);
        NC(nc_inq_var_filter_ids(ncid, v, &nf, fids));
        for (size_t k = 0; k < nf; k++) {
            NC(nc_inq_var_filter_info(ncid, v, fids[k], &np, params));
            add(t, "  filter %u params %zu%s", fids[k], np, np ? " first" : "");
            if (np) add(t, " %u", params[0]);
            add(t, "\n");
        }
        add(t, "  szip filter %d\n", nc_inq_var_filter_info(ncid, v, H5Z_FILTER_SZIP, &np, NULL));
        if (type == NC_INT || type == NC_DOUBLE) {
            int fi = 0;
            NC(nc_inq_var_fill(ncid, v, &nofill, type == NC_INT ? (void *)&fi : (void *)&fillv));
            add(t, "  nofill %d fill %g\n", nofill, type == NC_INT ? fi : fillv);
        }
        NC(nc_inq_var_quantize(ncid, v, &qm, &nsd));
        NC(nc_get_var_chunk_cache(ncid, v, &cs, &ne, &pre));
        add(t, "  quantize %d %d cache %zu %zu %.2f\n", qm, nsd, cs, ne, pre);
        for (int a = 0; a < natts; a++) {
            NC(nc_inq_attname(ncid, v, a, name));
            add(t, "  att %s\n", name);
        }
    }
}

/* The writer's check: the two descriptions alike (the first difference printed). */
static int same(const char *what, const Text *a, const Text *b) {
    if (!strcmp(a->text, b->text)) return 1;
    size_t i = 0;
    while (a->text[i] == b->text[i]) i++;
    while (i && a->text[i - 1] != '\n') i--;
    fprintf(stderr, "nc4model writer: %s differs from real netCDF-C's:\n--- dtf\n%.300s\n--- netCDF-C\n%.300s\n", what,
            a->text + i, b->text + i);
    return 0;
}

static double value(int var, size_t k) { return 100.0 * var + (double)k + 0.5; }

/* The writer's values: rows [y0, y0 + ny) of a, b, e (records 0 .. NREC-1 of a), of the last record of
 * p (the rest of p is never written: fill values); rank 0 writes c, t (in the file's first access mode,
 * netCDF-4's independent one) and m, one row from each memory type that no other variable is written
 * from (the twin: the same calls, serial). */
static void write_values(int ncid, int parallel, size_t y0, size_t ny) {
    int a, b, c, e, p, m, t, rank;
    NC(nc_inq_varid(ncid, "a", &a)), NC(nc_inq_varid(ncid, "b", &b)), NC(nc_inq_varid(ncid, "p", &p));
    NC(nc_inq_varid(ncid, "c", &c)), NC(nc_inq_varid(ncid, "e", &e)), NC(nc_inq_varid(ncid, "m", &m));
    NC(nc_inq_varid(ncid, "t", &t));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const size_t t0 = 0, tn = rank == 0 ? NX : 0;
    NC(nc_put_vara_text(ncid, t, &t0, &tn, "dtf-4"));
    float fa[NZ * NY * NX];
    double db[NZ * NY * NX];
    for (size_t k = 0; k < NZ * NY * NX; k++) fa[k] = (float)value(1, k), db[k] = value(2, k);
    for (int var = 0; parallel && var < 6; var++)
        NC(nc_var_par_access(ncid, (int[]){a, b, c, e, p, m}[var], NC_COLLECTIVE));
    for (size_t r = 0; r < NREC; r++) {
        size_t s[4] = {r, 0, y0, 0}, n[4] = {1, NZ, ny, NX};
        NC(nc_put_vara_float(ncid, a, s, n, fa));
    }
    size_t s[3] = {0, y0, 0}, n[3] = {NZ, ny, NX};
    NC(nc_put_vara_double(ncid, b, s, n, db));
    NC(nc_put_vara_float(ncid, e, s + 1, n + 1, fa));
    size_t ps[3] = {NREC - 1, y0, 0}, pn[3] = {1, ny, NX};
    NC(nc_put_vara_float(ncid, p, ps, pn, fa));
    int ci[NREC] = {3, 4};
    size_t c0 = 0, cn = rank == 0 ? NREC : 0;
    NC(nc_put_vara_int(ncid, c, &c0, &cn, ci));
    size_t ms[6][2] = {{0, 0}, {1, 0}, {2, 0}, {3, 0}, {4, 0}, {5, 0}}, mn[2] = {rank == 0 ? 1 : 0, NX};
    NC(nc_put_vara_schar(ncid, m, ms[0], mn, (const signed char[NX]){-128, -1, 0, 1, 127}));
    NC(nc_put_vara_uchar(ncid, m, ms[1], mn, (const unsigned char[NX]){0, 1, 128, 200, 255}));
    NC(nc_put_vara_ushort(ncid, m, ms[2], mn, (const unsigned short[NX]){0, 1, 32768, 60000, 65535}));
    NC(nc_put_vara_uint(ncid, m, ms[3], mn, (const unsigned[NX]){0, 7, 65536, 1u << 30, 2147483647u}));
    NC(nc_put_vara_longlong(ncid, m, ms[4], mn, (const long long[NX]){-2147483647LL - 1, -1, 0, 9, 2147483647LL}));
    NC(nc_put_vara_ulonglong(ncid, m, ms[5], mn, (const unsigned long long[NX]){0, 3, 99, 1ull << 20, 2147483647ull}));
}

/* DIR/classic.nc beside DIR/front.nc: a CDF-5 file, which the reader opens after the netCDF-4 one */
static void classic_path(const char *path, char *out, size_t n) {
    snprintf(out, n, "%.*sclassic.nc", (int)(strrchr(path, '/') + 1 - path), path);
}

static void write_classic(const char *path) {
    char name[4096];
    int ncid, dim, v;
    classic_path(path, name, sizeof name);
    NC(nc_create_par(name, NC_64BIT_DATA | NC_CLOBBER, MPI_COMM_WORLD, MPI_INFO_NULL, &ncid));
    NC(nc_def_dim(ncid, "x", NX, &dim));
    NC(nc_def_var(ncid, "c", NC_INT, 1, &dim, &v));
    NC(nc_close(ncid));
}

static int writer(const char *path, int classic) {
    int rank, size, ncid, twin, v;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int cmode = NC_NETCDF4 | NC_CLOBBER | (classic ? NC_CLASSIC_MODEL : 0);
    char twin_path[64];
    snprintf(twin_path, sizeof twin_path, "nc4model-twin-%d.nc", rank);
    NC(nc_create_par(path, cmode, MPI_COMM_WORLD, MPI_INFO_NULL, &ncid));
    NC(nc_create(twin_path, cmode | NC_DISKLESS, &twin));
    Text r1 = {0}, r2 = {0}, d1 = {0}, d2 = {0};
    define(ncid, classic, &r1), define(twin, classic, &r2);
    int ok = same("the return codes of the definitions", &r1, &r2);
    describe(ncid, &d1), describe(twin, &d2);
    ok &= same("the file in define mode", &d1, &d2);
    NC(nc_enddef(ncid)), NC(nc_enddef(twin));
    d1.len = d2.len = 0, describe(ncid, &d1), describe(twin, &d2);
    ok &= same("the file after enddef", &d1, &d2);
    const size_t base = NY / (size_t)size, extra = NY % (size_t)size, r = (size_t)rank;
    const size_t y0 = r * base + (r < extra ? r : extra), ny = base + (r < extra ? 1 : 0);
    /* a variable and an attribute defined in data mode (NC_NETCDF4 redefines by itself, the classic
     * model refuses), then the values (NC_NETCDF4 ends define mode by itself) */
    r1.len = r2.len = 0;
    int old = -1; /* (in data mode: netCDF-4 takes it) */
    add(&r1, "nofill %d", nc_set_fill(ncid, NC_NOFILL, &old)), add(&r1, " old %d\n", old);
    add(&r2, "nofill %d", nc_set_fill(twin, NC_NOFILL, &old)), add(&r2, " old %d\n", old);
    add(&r1, "late %d\n", nc_def_var(ncid, "late", NC_INT, 1, (int[]){3}, &v));
    add(&r2, "late %d\n", nc_def_var(twin, "late", NC_INT, 1, (int[]){3}, &v));
    add(&r1, "fill %d", nc_set_fill(ncid, NC_FILL, &old)), add(&r1, " old %d\n", old);
    add(&r2, "fill %d", nc_set_fill(twin, NC_FILL, &old)), add(&r2, " old %d\n", old);
    add(&r1, "late att %d\n", nc_put_att_text(ncid, NC_GLOBAL, "history", 4, "late"));
    add(&r2, "late att %d\n", nc_put_att_text(twin, NC_GLOBAL, "history", 4, "late"));
    ok &= same("the return codes of definitions in data mode", &r1, &r2);
    d1.len = d2.len = 0, describe(ncid, &d1), describe(twin, &d2);
    ok &= same("the file after definitions in data mode", &d1, &d2);
    write_values(ncid, 1, y0, ny), write_values(twin, 0, y0, ny);
    d1.len = d2.len = 0, describe(ncid, &d1), describe(twin, &d2);
    ok &= same("the file after its values", &d1, &d2);
    /* a variable defined after the values (netCDF4-python's order: each variable created, then written;
     * its implicit enddef is collective: every rank puts) */
    r1.len = r2.len = 0;
    const short after[3] = {7, -7, 77};
    const size_t start[1] = {0}, count[1] = {rank ? 0 : 2};
    int rc = nc_def_var(ncid, "after", NC_SHORT, 1, (int[]){3}, &v); /* (the classic model refuses it) */
    add(&r1, "after %d put %d\n", rc, rc ? rc : nc_put_vara_short(ncid, v, start, count, after));
    rc = nc_def_var(twin, "after", NC_SHORT, 1, (int[]){3}, &v);
    add(&r2, "after %d put %d\n", rc, rc ? rc : nc_put_vara_short(twin, v, start, count, after));
    ok &= same("the return codes of a definition after the values", &r1, &r2);
    NC(nc_close(ncid)), NC(nc_close(twin));
    write_classic(path);
    free(r1.text), free(r2.text), free(d1.text), free(d2.text);
    int all = 0, bad = !ok;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf(all ? "nc4model writer: %d ranks saw a difference\n" : "nc4model writer: as netCDF-C\n", all);
    return all ? 1 : 0;
}

/* m's rows read back each in the memory type it was written from, its first also as short, int and
 * float (double and text: the dump above): every memory type of nc_get_vara. */
static void read_typed(int ncid, Text *t) {
    int m;
    NC(nc_inq_varid(ncid, "m", &m));
    size_t s[2] = {0, 0}, n[2] = {1, NX};
    signed char sc[NX];
    short sh[NX];
    int in[NX];
    float fl[NX];
    unsigned char uc[NX];
    unsigned short us[NX];
    unsigned ui[NX];
    long long ll[NX];
    unsigned long long ul[NX];
    NC(nc_get_vara_schar(ncid, m, s, n, sc)), NC(nc_get_vara_short(ncid, m, s, n, sh));
    NC(nc_get_vara_int(ncid, m, s, n, in)), NC(nc_get_vara_float(ncid, m, s, n, fl));
    s[0] = 1, NC(nc_get_vara_uchar(ncid, m, s, n, uc));
    s[0] = 2, NC(nc_get_vara_ushort(ncid, m, s, n, us));
    s[0] = 3, NC(nc_get_vara_uint(ncid, m, s, n, ui));
    s[0] = 4, NC(nc_get_vara_longlong(ncid, m, s, n, ll));
    s[0] = 5, NC(nc_get_vara_ulonglong(ncid, m, s, n, ul));
    add(t, "m by type:");
    for (int k = 0; k < NX; k++)
        add(t, " %d/%d/%d/%g %u %u %u %lld %llu", sc[k], sh[k], in[k], fl[k], uc[k], us[k], ui[k], ll[k], ul[k]);
    add(t, "\n");
}

static int reader(const char *path) {
    int rank, ncid, nvars;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    NC(nc_open_par(path, NC_NOWRITE, MPI_COMM_WORLD, MPI_INFO_NULL, &ncid));
    Text t = {0};
    describe(ncid, &t);
    NC(nc_inq_nvars(ncid, &nvars));
    for (int v = 0; v < nvars; v++) {
        int nd, dims[8];
        size_t n = 1, len;
        char name[NC_MAX_NAME + 1];
        NC(nc_inq_var(ncid, v, name, NULL, &nd, dims, NULL));
        size_t start[8] = {0}, count[8];
        for (int k = 0; k < nd; k++) NC(nc_inq_dimlen(ncid, dims[k], &len)), count[k] = len, n *= len;
        if (n > 4096) n /= count[0], count[0] = 1; /* (h: its first row) */
        nc_type type;
        NC(nc_inq_vartype(ncid, v, &type));
        add(&t, "values of %s:", name);
        if (type == NC_CHAR) { /* (text reads only as text: NC_ECHAR) */
            char *c = malloc(n + 1);
            NC(nc_get_vara_text(ncid, v, start, count, c));
            for (size_t k = 0; k < n; k++) add(&t, " %d", c[k]);
            free(c);
        } else {
            double *x = malloc(sizeof(double) * (n + 1));
            NC(nc_get_vara_double(ncid, v, start, count, x));
            for (size_t k = 0; k < n; k++) add(&t, " %.17g", x[k]);
            free(x);
        }
        add(&t, "\n");
    }
    read_typed(ncid, &t);
    NC(nc_close(ncid));
    /* a classic file, opened by a process that has opened a netCDF-4 one */
    char name[4096];
    int fmt, fx, mode, ndims, natts, unlim;
    classic_path(path, name, sizeof name);
    NC(nc_open_par(name, NC_NOWRITE, MPI_COMM_WORLD, MPI_INFO_NULL, &ncid));
    NC(nc_inq_format(ncid, &fmt));
    NC(nc_inq_format_extended(ncid, &fx, &mode));
    NC(nc_inq(ncid, &ndims, &nvars, &natts, &unlim));
    add(&t, "classic.nc: format %d %d mode %#x dims %d vars %d atts %d unlimited %d\n", fmt, fx, mode, ndims, nvars,
        natts, unlim);
    NC(nc_close(ncid));
    if (getenv("NCPAIR_DUMP")) {
        char dump[4096];
        snprintf(dump, sizeof dump, "%s.%d", getenv("NCPAIR_DUMP"), rank);
        FILE *f = fopen(dump, "w");
        if (!f || fwrite(t.text, 1, t.len, f) != t.len || fclose(f)) {
            fprintf(stderr, "nc4model: cannot write %s\n", dump);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    free(t.text);
    if (rank == 0) printf("nc4model reader: dumped\n");
    return 0;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    if (argc < 5 || strncmp(argv[4], "netcdf4", 7)) {
        fprintf(stderr, "usage: nc4model writer|reader nc DIR netcdf4|netcdf4-classic [ACCESS]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/front.nc", argv[3]);
    const int rc = !strcmp(argv[1], "writer") ? writer(path, !strcmp(argv[4], "netcdf4-classic")) : reader(path);
    MPI_Finalize();
    return rc;
}

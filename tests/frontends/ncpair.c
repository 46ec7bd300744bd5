/*
 * A writer and a reader of one netCDF file in parallel, through netCDF-C's parallel API (nc_create_par,
 * nc_open_par: on classic, 64-bit offset and CDF-5 files the PnetCDF flavour of netCDF-C calls
 * PnetCDF) or through PnetCDF itself, so that any pair of the two can be run; no dtf call anywhere.
 *   writer  creates DIR/front.nc: a global text attribute, t(y, x) doubles with attributes, a record
 *           variable rec(time, y, x) floats of NREC records, and n(x) ints; the ranks write row blocks
 *           of t and rec, rank 0 writes n (collective calls, or independent ones)
 *   reader  asks stat() whether the file exists (a restart check), opens it, checks the format, the
 *           dimensions, the attributes and every value, reading column blocks (another
 *           decomposition), the records and n
 * Prints "ncpair reader: all values verified" when they are; exit status 1 on wrong data, 2 on an
 * error. With NCPAIR_DUMP=PREFIX each reader rank writes every byte it read to PREFIX.<rank> (the
 * tests compare them with the same programs run on a plain file). NCPAIR_GROUP=1: the writer defines a
 * group in the file it created (a netCDF-4 file). With NCPAIR_DELAY=S the writer
 * sleeps S seconds before it creates the file (a reader that starts first looks at it before).
 * NCPAIR_WRITEBACK=1, NCPAIR_READBACK=1: the write-back below (open_again); the reader's existence
 * check is left out then (the file's config names no roles: comp1=/comp2=).
 *
 * usage: ncpair writer|reader nc|pnc DIR FORMAT ACCESS [NY NX NREC]
 *   FORMAT: classic, 64bit-offset, cdf5 (or netcdf4, netcdf4-classic: HDF5, not through PnetCDF)
 *   ACCESS: collective or independent; or serial (nc): one file per writer process, below
 * serial: each writer rank creates DIR/front.<rank>.nc alone (nc_create) NCPAIR_VERSIONS times (default
 * 1: the same path again), t(y, x) doubles of that version and writer, h(y, x) of which it writes
 * the first row alone, and r(time, x), q(time, x) ints of which it writes record 2 of r alone (the
 * rest is the library's default fill: netCDF-C's classic library fills the records a write adds in
 * every record variable), asking nc_set_fill in data mode for the default; each reader rank reads
 * every writer's file (NCPAIR_WRITERS of them) alone (nc_open), version by version, the last reader
 * rank holding each file of the first version open a second before it reads (a writer that
 * overwrote it meanwhile would show); NCPAIR_NAMED=1: version v of writer w is DIR/front.<w>.v<v>.nc (a
 * name per cycle). NCPAIR_WRITEBACK=1: then reader rank k writes back the (last version's) files
 * k, k + size, ... alone (NC_WRITE): a variable c(x) added by nc_redef of which it writes c[0], and
 * record 3 of r; NCPAIR_READBACK=1: each writer rank reads its file back alone and checks them, the
 * fill values where nothing was written included (c, and record 3 of q).
 */
#include <errno.h>
#include <mpi.h>
#include <netcdf.h>
#include <netcdf_par.h>
#include <pnetcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void check(int err, const char *call, int pnc) {
    if (err == NC_NOERR) return;
    fprintf(stderr, "ncpair: %s failed: %s\n", call, pnc ? ncmpi_strerror(err) : nc_strerror(err));
    MPI_Abort(MPI_COMM_WORLD, 2);
}
#define NC(call) check((call), #call, 0)
#define PNC(call) check((call), #call, 1)

static double tval(MPI_Offset y, MPI_Offset x) { return 1000.0 * (double)y + (double)x + 0.25; }
static float rval(MPI_Offset r, MPI_Offset y, MPI_Offset x) { return (float)(100000 * r + 1000 * y + x) + 0.5f; }
static int nval(MPI_Offset x) { return (int)(7 * x - 3); }

static void block(MPI_Offset n, int size, int rank, MPI_Offset *start, MPI_Offset *count) {
    MPI_Offset base = n / size, extra = n % size;
    *start = rank * base + (rank < extra ? rank : extra);
    *count = base + (rank < extra ? 1 : 0);
}

static const char kTitle[] = "dtf front ends";
static const char kUnits[] = "K";
static const double kScale[2] = {0.5, 2.0};

static FILE *g_dump;
static int g_bad;
static void dump(const void *p, size_t n) {
    if (g_dump && n && fwrite(p, 1, n, g_dump) != n) {
        fprintf(stderr, "ncpair: writing the dump failed\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}
static void expect(int ok, const char *what, int rank) {
    if (!ok && g_bad++ < 10) fprintf(stderr, "ncpair rank %d: wrong %s\n", rank, what);
}
/* NCPAIR_DUMP=PREFIX: a reader rank writes every byte it read to PREFIX.<rank>. */
static void open_dump(int rank) {
    if (!getenv("NCPAIR_DUMP")) return;
    char name[4096];
    snprintf(name, sizeof name, "%s.%d", getenv("NCPAIR_DUMP"), rank);
    if (!(g_dump = fopen(name, "wb"))) {
        fprintf(stderr, "ncpair: cannot write %s\n", name);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

/* NCPAIR_WRITEBACK=1: the reader opens the file again with NC_WRITE and writes t + 1 over its block
 * (an assimilation writing its analysis back); NCPAIR_READBACK=1: the writer then opens it again
 * and checks t + 1 over its own block. */
static void open_again(int pnc, const char *path, int mode, int *ncid, int *t) {
    if (pnc) {
        PNC(ncmpi_open(MPI_COMM_WORLD, path, mode, MPI_INFO_NULL, ncid));
        PNC(ncmpi_inq_varid(*ncid, "t", t));
    } else {
        NC(nc_open_par(path, mode, MPI_COMM_WORLD, MPI_INFO_NULL, ncid));
        NC(nc_inq_varid(*ncid, "t", t));
    }
}

static void access_t(int pnc, int indep, int ncid, int t, const MPI_Offset *start, const MPI_Offset *count,
                     double *buf, int write) {
    size_t s[2] = {(size_t)start[0], (size_t)start[1]}, c[2] = {(size_t)count[0], (size_t)count[1]};
    if (!pnc) {
        NC(nc_var_par_access(ncid, t, indep ? NC_INDEPENDENT : NC_COLLECTIVE));
        if (write) NC(nc_put_vara_double(ncid, t, s, c, buf));
        else NC(nc_get_vara_double(ncid, t, s, c, buf));
        NC(nc_close(ncid));
        return;
    }
    if (indep) PNC(ncmpi_begin_indep_data(ncid));
    if (write) PNC(indep ? ncmpi_put_vara_double(ncid, t, start, count, buf)
                         : ncmpi_put_vara_double_all(ncid, t, start, count, buf));
    else PNC(indep ? ncmpi_get_vara_double(ncid, t, start, count, buf)
                   : ncmpi_get_vara_double_all(ncid, t, start, count, buf));
    if (indep) PNC(ncmpi_end_indep_data(ncid));
    PNC(ncmpi_close(ncid));
}

static int env_on(const char *name) { return getenv(name) && atoi(getenv(name)) == 1; }
static int env_int(const char *name, int otherwise) { return getenv(name) ? atoi(getenv(name)) : otherwise; }

static double sval(int version, int writer, MPI_Offset y, MPI_Offset x) {
    return 1e6 * version + 1e4 * writer + tval(y, x);
}

/* A file created or opened alone takes no parallel access: netCDF-C refuses it on a netCDF-4 file
 * (NC_ENOPAR) and takes it on a classic one. */
static void expect_serial_access(int ncid, int varid, int cmode, int rank) {
    const int rc = nc_var_par_access(ncid, varid, NC_COLLECTIVE), want = (cmode & NC_NETCDF4) ? NC_ENOPAR : NC_NOERR;
    if (rc == want) return;
    fprintf(stderr, "ncpair rank %d: nc_var_par_access on a serial file returned %d, netCDF-C's %d\n", rank, rc, want);
    ++g_bad;
}

enum { kSerialRecs = 3, kWrittenRec = 2, kBackRec = 3, kBackValue = 42 };

/* The records of r and q a serial reader reads: record kWrittenRec of r is nval, the rest fill. */
static void read_records(int ncid, MPI_Offset nx, int rank) {
    const size_t n = (size_t)(kSerialRecs * nx);
    int *buf = malloc(sizeof(int) * n), r, q;
    NC(nc_inq_varid(ncid, "r", &r));
    NC(nc_inq_varid(ncid, "q", &q));
    NC(nc_get_vara_int(ncid, r, (size_t[]){0, 0}, (size_t[]){kSerialRecs, (size_t)nx}, buf));
    for (size_t i = 0; i < n; i++)
        expect(buf[i] == ((MPI_Offset)i / nx == kWrittenRec ? nval((MPI_Offset)i % nx) : NC_FILL_INT), "value of r",
               rank);
    dump(buf, sizeof(int) * n);
    NC(nc_get_vara_int(ncid, q, (size_t[]){0, 0}, (size_t[]){kSerialRecs, (size_t)nx}, buf));
    for (size_t i = 0; i < n; i++) expect(buf[i] == NC_FILL_INT, "value of q (never written)", rank);
    dump(buf, sizeof(int) * n);
    free(buf);
}

static void write_serial(const char *path, int cmode, MPI_Offset ny, MPI_Offset nx, const double *tb, int rank) {
    int ncid, dims[3], t, h, r, q, old = -1, *nb = malloc(sizeof(int) * (size_t)nx);
    for (MPI_Offset i = 0; i < nx; i++) nb[i] = nval(i);
    NC(nc_create(path, cmode, &ncid));
    NC(nc_put_att_text(ncid, NC_GLOBAL, "title", sizeof kTitle - 1, kTitle));
    NC(nc_def_dim(ncid, "y", (size_t)ny, &dims[0]));
    NC(nc_def_dim(ncid, "x", (size_t)nx, &dims[1]));
    NC(nc_def_dim(ncid, "time", NC_UNLIMITED, &dims[2]));
    NC(nc_def_var(ncid, "t", NC_DOUBLE, 2, dims, &t));
    NC(nc_def_var(ncid, "h", NC_DOUBLE, 2, dims, &h));
    NC(nc_def_var(ncid, "r", NC_INT, 2, (int[]){dims[2], dims[1]}, &r));
    NC(nc_def_var(ncid, "q", NC_INT, 2, (int[]){dims[2], dims[1]}, &q));
    NC(nc_enddef(ncid));
    expect(nc_set_fill(ncid, NC_FILL, &old) == NC_NOERR && old == NC_FILL, "nc_set_fill in data mode", rank);
    expect_serial_access(ncid, t, cmode, rank);
    NC(nc_put_var_double(ncid, t, tb));
    NC(nc_put_vara_double(ncid, h, (size_t[]){0, 0}, (size_t[]){1, (size_t)nx}, tb));
    NC(nc_put_vara_int(ncid, r, (size_t[]){kWrittenRec, 0}, (size_t[]){1, (size_t)nx}, nb));
    NC(nc_close(ncid));
    free(nb);
}

static void read_serial(const char *path, int v, int w, int versions, MPI_Offset ny, MPI_Offset nx, int cmode,
                        double *tb) {
    int rank, size, ncid, t, h, format[2];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    NC(nc_open(path, NC_NOWRITE, &ncid));
    NC(nc_inq_format_extended(ncid, &format[0], &format[1]));
    dump(format, sizeof format);
    if (v == 1 && rank == size - 1 && versions > 1) sleep(1);
    NC(nc_inq_varid(ncid, "t", &t));
    expect_serial_access(ncid, t, cmode, rank);
    NC(nc_get_var_double(ncid, t, tb));
    for (MPI_Offset i = 0; i < ny * nx; i++) expect(tb[i] == sval(v, w, i / nx, i % nx), "value", rank);
    dump(tb, sizeof(double) * (size_t)(ny * nx));
    NC(nc_inq_varid(ncid, "h", &h));
    NC(nc_get_var_double(ncid, h, tb));
    for (MPI_Offset i = 0; i < ny * nx; i++)
        expect(tb[i] == (i < nx ? sval(v, w, 0, i) : NC_FILL_DOUBLE), "value of h", rank);
    dump(tb, sizeof(double) * (size_t)(ny * nx));
    read_records(ncid, nx, rank);
    NC(nc_close(ncid));
}

/* NCPAIR_WRITEBACK: c(x) added by nc_redef (c[0] written) and record kBackRec of r (nval + 1). */
static void write_back(const char *path, MPI_Offset nx) {
    int ncid, x, r, c, value = kBackValue, *nb = malloc(sizeof(int) * (size_t)nx);
    for (MPI_Offset i = 0; i < nx; i++) nb[i] = nval(i) + 1;
    NC(nc_open(path, NC_WRITE, &ncid));
    NC(nc_inq_dimid(ncid, "x", &x));
    NC(nc_inq_varid(ncid, "r", &r));
    NC(nc_redef(ncid));
    NC(nc_def_var(ncid, "c", NC_INT, 1, &x, &c));
    NC(nc_enddef(ncid));
    NC(nc_put_var1_int(ncid, c, (size_t[]){0}, &value));
    NC(nc_put_vara_int(ncid, r, (size_t[]){kBackRec, 0}, (size_t[]){1, (size_t)nx}, nb));
    NC(nc_close(ncid));
    free(nb);
}

/* NCPAIR_READBACK: what write_back wrote, and the fill values around it. */
static void read_back(const char *path, MPI_Offset nx, int rank) {
    int ncid, time, r, q, c, *buf = malloc(sizeof(int) * (size_t)nx);
    size_t nrecs = 0;
    NC(nc_open(path, NC_NOWRITE, &ncid));
    NC(nc_inq_dimid(ncid, "time", &time));
    NC(nc_inq_dimlen(ncid, time, &nrecs));
    expect(nrecs == kBackRec + 1, "record count after the write-back", rank);
    NC(nc_inq_varid(ncid, "r", &r));
    NC(nc_inq_varid(ncid, "q", &q));
    NC(nc_inq_varid(ncid, "c", &c));
    NC(nc_get_var_int(ncid, c, buf));
    for (MPI_Offset i = 0; i < nx; i++) expect(buf[i] == (i ? NC_FILL_INT : kBackValue), "value of c", rank);
    NC(nc_get_vara_int(ncid, r, (size_t[]){kBackRec, 0}, (size_t[]){1, (size_t)nx}, buf));
    for (MPI_Offset i = 0; i < nx; i++) expect(buf[i] == nval(i) + 1, "value of r written back", rank);
    NC(nc_get_vara_int(ncid, q, (size_t[]){kBackRec, 0}, (size_t[]){1, (size_t)nx}, buf));
    for (MPI_Offset i = 0; i < nx; i++) expect(buf[i] == NC_FILL_INT, "value of q in the added record", rank);
    NC(nc_close(ncid));
    free(buf);
}

/* Writer w's file of version v. */
static void serial_path(char *path, size_t n, const char *dir, int w, int v) {
    if (env_on("NCPAIR_NAMED")) snprintf(path, n, "%s/front.%d.v%d.nc", dir, w, v);
    else snprintf(path, n, "%s/front.%d.nc", dir, w);
}

static int serial(int writer, const char *dir, int cmode, MPI_Offset ny, MPI_Offset nx) {
    int rank, size, all = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int versions = env_int("NCPAIR_VERSIONS", 1), writers = env_int("NCPAIR_WRITERS", 1);
    double *tb = malloc(sizeof(double) * (size_t)(ny * nx));
    char path[4096];
    for (int v = 1; v <= versions; v++)
        for (int w = writer ? rank : 0; w < (writer ? rank + 1 : writers); w++) {
            serial_path(path, sizeof path, dir, w, v);
            if (!writer) {
                read_serial(path, v, w, versions, ny, nx, cmode, tb);
                continue;
            }
            for (MPI_Offset i = 0; i < ny * nx; i++) tb[i] = sval(v, w, i / nx, i % nx);
            write_serial(path, cmode, ny, nx, tb, rank);
        }
    for (int w = rank; w < (writer ? rank + 1 : writers); w += size) { /* (a writer: its own file) */
        serial_path(path, sizeof path, dir, w, versions);
        if (!writer && env_on("NCPAIR_WRITEBACK")) write_back(path, nx);
        if (writer && env_on("NCPAIR_READBACK")) read_back(path, nx, rank);
    }
    free(tb);
    MPI_Allreduce(&g_bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (!writer && rank == 0)
        printf(all ? "ncpair reader: %d wrong values\n" : "ncpair reader: all values verified\n", all);
    if (writer && rank == 0 && env_on("NCPAIR_READBACK"))
        printf(all ? "ncpair writer: %d wrong values read back\n" : "ncpair writer: write-back verified\n", all);
    return all ? 1 : 0;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 6) {
        if (rank == 0) fprintf(stderr, "usage: ncpair writer|reader nc|pnc DIR FORMAT ACCESS [NY NX NREC]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int writer = !strcmp(argv[1], "writer"), pnc = !strcmp(argv[2], "pnc");
    const char *format = argv[4];
    const int indep = !strcmp(argv[5], "independent");
    const MPI_Offset ny = argc > 8 ? atoll(argv[6]) : 7, nx = argc > 8 ? atoll(argv[7]) : 9;
    const MPI_Offset nrec = argc > 8 ? atoll(argv[8]) : 3;
    int cmode = NC_CLOBBER, expected_format = NC_FORMAT_CLASSIC;
    if (!strcmp(format, "64bit-offset")) cmode |= NC_64BIT_OFFSET, expected_format = NC_FORMAT_64BIT_OFFSET;
    else if (!strcmp(format, "cdf5")) cmode |= NC_64BIT_DATA, expected_format = NC_FORMAT_CDF5;
    else if (!strcmp(format, "netcdf4")) cmode |= NC_NETCDF4, expected_format = NC_FORMAT_NETCDF4;
    else if (!strcmp(format, "netcdf4-classic"))
        cmode |= NC_NETCDF4 | NC_CLASSIC_MODEL, expected_format = NC_FORMAT_NETCDF4_CLASSIC;
    else if (strcmp(format, "classic")) {
        if (rank == 0) fprintf(stderr, "ncpair: unknown format '%s'\n", format);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/front.nc", argv[3]);
    int ncid, dims[3], t, rec, n;
    MPI_Offset start[3], count[3];

    if (!strcmp(argv[5], "serial")) {
        if (!writer) open_dump(rank);
        const int rc = serial(writer, argv[3], cmode, ny, nx);
        if (g_dump) fclose(g_dump);
        MPI_Finalize();
        return rc;
    }
    if (writer) {
        if (getenv("NCPAIR_DELAY")) sleep((unsigned)atoi(getenv("NCPAIR_DELAY")));
        block(ny, size, rank, &start[1], &count[1]);
        start[2] = 0, count[2] = nx;
        double *tb = malloc(sizeof(double) * (size_t)(count[1] * nx + 1));
        float *rb = malloc(sizeof(float) * (size_t)(count[1] * nx + 1));
        int *nb = malloc(sizeof(int) * (size_t)nx);
        for (MPI_Offset j = 0; j < count[1]; j++)
            for (MPI_Offset i = 0; i < nx; i++) tb[j * nx + i] = tval(start[1] + j, i);
        for (MPI_Offset i = 0; i < nx; i++) nb[i] = nval(i);
        if (pnc) {
            PNC(ncmpi_create(MPI_COMM_WORLD, path, cmode, MPI_INFO_NULL, &ncid));
            PNC(ncmpi_put_att_text(ncid, NC_GLOBAL, "title", sizeof kTitle - 1, kTitle));
            PNC(ncmpi_def_dim(ncid, "time", NC_UNLIMITED, &dims[0]));
            PNC(ncmpi_def_dim(ncid, "y", ny, &dims[1]));
            PNC(ncmpi_def_dim(ncid, "x", nx, &dims[2]));
            PNC(ncmpi_def_var(ncid, "t", NC_DOUBLE, 2, dims + 1, &t));
            PNC(ncmpi_put_att_text(ncid, t, "units", sizeof kUnits - 1, kUnits));
            PNC(ncmpi_put_att_double(ncid, t, "scale", NC_DOUBLE, 2, kScale));
            PNC(ncmpi_def_var(ncid, "rec", NC_FLOAT, 3, dims, &rec));
            PNC(ncmpi_def_var(ncid, "n", NC_INT, 1, dims + 2, &n));
            PNC(ncmpi_enddef(ncid));
            if (indep) PNC(ncmpi_begin_indep_data(ncid));
            for (MPI_Offset r = 0; r < nrec; r++) {
                for (MPI_Offset j = 0; j < count[1]; j++)
                    for (MPI_Offset i = 0; i < nx; i++) rb[j * nx + i] = rval(r, start[1] + j, i);
                start[0] = r, count[0] = 1;
                if (indep) PNC(ncmpi_put_vara_float(ncid, rec, start, count, rb));
                else PNC(ncmpi_put_vara_float_all(ncid, rec, start, count, rb));
            }
            if (indep) {
                PNC(ncmpi_put_vara_double(ncid, t, start + 1, count + 1, tb));
                if (rank == 0) PNC(ncmpi_put_var_int(ncid, n, nb));
                PNC(ncmpi_end_indep_data(ncid));
            } else {
                PNC(ncmpi_put_vara_double_all(ncid, t, start + 1, count + 1, tb));
                MPI_Offset s0 = 0, c0 = rank == 0 ? nx : 0;
                PNC(ncmpi_put_vara_int_all(ncid, n, &s0, &c0, nb));
            }
            PNC(ncmpi_close(ncid));
        } else {
            NC(nc_create_par(path, cmode, MPI_COMM_WORLD, MPI_INFO_NULL, &ncid));
            if (getenv("NCPAIR_GROUP")) NC(nc_def_grp(ncid, "sub", &n)); /* (a netCDF-4 feature dtf refuses) */
            NC(nc_put_att_text(ncid, NC_GLOBAL, "title", sizeof kTitle - 1, kTitle));
            NC(nc_def_dim(ncid, "time", NC_UNLIMITED, &dims[0]));
            NC(nc_def_dim(ncid, "y", (size_t)ny, &dims[1]));
            NC(nc_def_dim(ncid, "x", (size_t)nx, &dims[2]));
            NC(nc_def_var(ncid, "t", NC_DOUBLE, 2, dims + 1, &t));
            NC(nc_put_att_text(ncid, t, "units", sizeof kUnits - 1, kUnits));
            NC(nc_put_att_double(ncid, t, "scale", NC_DOUBLE, 2, kScale));
            NC(nc_def_var(ncid, "rec", NC_FLOAT, 3, dims, &rec));
            NC(nc_def_var(ncid, "n", NC_INT, 1, dims + 2, &n));
            NC(nc_enddef(ncid));
            const int how = indep ? NC_INDEPENDENT : NC_COLLECTIVE;
            NC(nc_var_par_access(ncid, t, how));
            NC(nc_var_par_access(ncid, rec, how));
            NC(nc_var_par_access(ncid, n, how));
            size_t s[3], c[3];
            for (MPI_Offset r = 0; r < nrec; r++) {
                for (MPI_Offset j = 0; j < count[1]; j++)
                    for (MPI_Offset i = 0; i < nx; i++) rb[j * nx + i] = rval(r, start[1] + j, i);
                s[0] = (size_t)r, c[0] = 1, s[1] = (size_t)start[1], c[1] = (size_t)count[1], s[2] = 0, c[2] = (size_t)nx;
                NC(nc_put_vara_float(ncid, rec, s, c, rb));
            }
            NC(nc_put_vara_double(ncid, t, s + 1, c + 1, tb));
            size_t s0 = 0, c0 = rank == 0 ? (size_t)nx : 0;
            if (!indep || rank == 0) NC(nc_put_vara_int(ncid, n, &s0, &c0, nb));
            NC(nc_close(ncid));
        }
        int bad = 0, all = 0;
        if (env_on("NCPAIR_READBACK")) {
            open_again(pnc, path, NC_NOWRITE, &ncid, &t);
            access_t(pnc, indep, ncid, t, start + 1, count + 1, tb, 0);
            for (MPI_Offset j = 0; j < count[1]; j++)
                for (MPI_Offset i = 0; i < nx; i++) bad += tb[j * nx + i] != tval(start[1] + j, i) + 1;
            MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            if (rank == 0) printf(all ? "ncpair writer: %d wrong values written back\n" : "ncpair writer: write-back verified\n", all);
        }
        free(tb), free(rb), free(nb);
        MPI_Finalize();
        return all ? 1 : 0;
    }

    /* reader: column blocks of t and of each record, all of n */
    open_dump(rank);
    /* A restart check, as programs make one before they open: the file must exist for the reader,
     * also before the writer has created it (a writer started NCPAIR_DELAY seconds late). */
    struct stat st;
    if (!env_on("NCPAIR_WRITEBACK") && stat(path, &st) != 0) { /* (comp1=/comp2=: see frontends.py) */
        fprintf(stderr, "ncpair reader rank %d: stat(%s): %s\n", rank, path, strerror(errno));
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    int fmt = -1, ndims = 0, nvars = 0, ngatts = 0, unlim = -1, formatx = 0, mode = 0;
    MPI_Offset len_y = 0, len_x = 0, nrecs = 0;
    char title[64] = "", units[8] = "";
    double scale[2] = {0, 0};
    if (pnc) {
        PNC(ncmpi_open(MPI_COMM_WORLD, path, NC_NOWRITE, MPI_INFO_NULL, &ncid));
        PNC(ncmpi_inq_format(ncid, &fmt));
        PNC(ncmpi_inq(ncid, &ndims, &nvars, &ngatts, &unlim));
        PNC(ncmpi_inq_dimlen(ncid, 1, &len_y));
        PNC(ncmpi_inq_dimlen(ncid, 2, &len_x));
        PNC(ncmpi_inq_dimlen(ncid, unlim < 0 ? 0 : unlim, &nrecs));
        PNC(ncmpi_get_att_text(ncid, NC_GLOBAL, "title", title));
        PNC(ncmpi_inq_varid(ncid, "t", &t));
        PNC(ncmpi_inq_varid(ncid, "rec", &rec));
        PNC(ncmpi_inq_varid(ncid, "n", &n));
        PNC(ncmpi_get_att_text(ncid, t, "units", units));
        PNC(ncmpi_get_att_double(ncid, t, "scale", scale));
    } else {
        size_t l;
        NC(nc_open_par(path, NC_NOWRITE, MPI_COMM_WORLD, MPI_INFO_NULL, &ncid));
        NC(nc_inq_format(ncid, &fmt));
        NC(nc_inq_format_extended(ncid, &formatx, &mode));
        NC(nc_inq(ncid, &ndims, &nvars, &ngatts, &unlim));
        NC(nc_inq_dimlen(ncid, 1, &l)), len_y = (MPI_Offset)l;
        NC(nc_inq_dimlen(ncid, 2, &l)), len_x = (MPI_Offset)l;
        NC(nc_inq_dimlen(ncid, unlim < 0 ? 0 : unlim, &l)), nrecs = (MPI_Offset)l;
        NC(nc_get_att_text(ncid, NC_GLOBAL, "title", title));
        NC(nc_inq_varid(ncid, "t", &t));
        NC(nc_inq_varid(ncid, "rec", &rec));
        NC(nc_inq_varid(ncid, "n", &n));
        NC(nc_get_att_text(ncid, t, "units", units));
        NC(nc_get_att_double(ncid, t, "scale", scale));
        const int how = indep ? NC_INDEPENDENT : NC_COLLECTIVE;
        NC(nc_var_par_access(ncid, t, how));
        NC(nc_var_par_access(ncid, rec, how));
        NC(nc_var_par_access(ncid, n, how));
    }
    expect(fmt == expected_format, "format", rank);
    expect(ndims == 3 && nvars == 3 && ngatts == 1 && unlim == 0, "numbers of dimensions, variables, attributes", rank);
    expect(len_y == ny && len_x == nx && nrecs == nrec, "dimension lengths or record count", rank);
    expect(!strcmp(title, kTitle) && !strcmp(units, kUnits) && scale[0] == kScale[0] && scale[1] == kScale[1],
           "attributes", rank);
    int head[8] = {fmt, ndims, nvars, ngatts, unlim, (int)nrecs, formatx, mode};
    dump(head, sizeof head), dump(title, sizeof title), dump(units, sizeof units), dump(scale, sizeof scale);

    block(nx, size, rank, &start[2], &count[2]);
    start[1] = 0, count[1] = ny;
    const size_t cells = (size_t)(ny * count[2]) + 1;
    double *tb = malloc(sizeof(double) * cells);
    float *rb = malloc(sizeof(float) * cells);
    int *nb = malloc(sizeof(int) * (size_t)nx);
    if (pnc) {
        if (indep) PNC(ncmpi_begin_indep_data(ncid));
        if (indep) PNC(ncmpi_get_vara_double(ncid, t, start + 1, count + 1, tb));
        else PNC(ncmpi_get_vara_double_all(ncid, t, start + 1, count + 1, tb));
    } else {
        size_t s[2] = {0, (size_t)start[2]}, c[2] = {(size_t)ny, (size_t)count[2]};
        NC(nc_get_vara_double(ncid, t, s, c, tb));
    }
    for (MPI_Offset j = 0; j < ny; j++)
        for (MPI_Offset i = 0; i < count[2]; i++) expect(tb[j * count[2] + i] == tval(j, start[2] + i), "t", rank);
    dump(tb, sizeof(double) * (size_t)(ny * count[2]));
    for (MPI_Offset r = 0; r < nrec; r++) {
        start[0] = r, count[0] = 1;
        if (pnc) {
            if (indep) PNC(ncmpi_get_vara_float(ncid, rec, start, count, rb));
            else PNC(ncmpi_get_vara_float_all(ncid, rec, start, count, rb));
        } else {
            size_t s[3] = {(size_t)r, 0, (size_t)start[2]}, c[3] = {1, (size_t)ny, (size_t)count[2]};
            NC(nc_get_vara_float(ncid, rec, s, c, rb));
        }
        for (MPI_Offset j = 0; j < ny; j++)
            for (MPI_Offset i = 0; i < count[2]; i++) expect(rb[j * count[2] + i] == rval(r, j, start[2] + i), "rec", rank);
        dump(rb, sizeof(float) * (size_t)(ny * count[2]));
    }
    if (pnc) {
        if (indep) PNC(ncmpi_get_var_int(ncid, n, nb));
        else PNC(ncmpi_get_var_int_all(ncid, n, nb));
        if (indep) PNC(ncmpi_end_indep_data(ncid));
        PNC(ncmpi_close(ncid));
    } else {
        NC(nc_get_var_int(ncid, n, nb));
        NC(nc_close(ncid));
    }
    for (MPI_Offset i = 0; i < nx; i++) expect(nb[i] == nval(i), "n", rank);
    dump(nb, sizeof(int) * (size_t)nx);
    if (env_on("NCPAIR_WRITEBACK")) {
        for (MPI_Offset k = 0; k < ny * count[2]; k++) tb[k] += 1;
        open_again(pnc, path, NC_WRITE, &ncid, &t);
        access_t(pnc, indep, ncid, t, start + 1, count + 1, tb, 1);
    }
    if (g_dump) fclose(g_dump);
    int bad = g_bad, all = 0;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf(all ? "ncpair reader: %d wrong values\n" : "ncpair reader: all values verified\n", all);
    free(tb), free(rb), free(nb);
    MPI_Finalize();
    return all ? 1 : 0;
}

/*
 * A writer program interpreter for the contract tests: reads programs of PnetCDF operations (text, one
 * operation a line; tests/contract/randprog.py generates them and documents the syntax) and runs each
 * on all ranks with PnetCDF, creating case.<K>.nc in the current directory, in the order given. It
 * links plain PnetCDF only: it runs without dtf (the oracle) and under `dtfrun --preload` (the
 * zero-change mode), so one launch writes every case of a run.
 *
 * usage: ncwriter OUT PROGRAM...    (a directory stands for its prog.<K>.txt, in the order of K)
 *
 * Each rank writes OUT.<rank>: a line "case K" per program, then one line per call of that rank that
 * failed ("op N (LINE): CODE: message") or `records` operation ("records N: COUNT"), and "end K". Values: element i of the buffer of the put of line N
 * by rank R in case K is (K % 100) * 100000 + N * 1000 + R * 100 + i % 100 (so 1204307: case 12, line
 * 43, rank 0, element 7), reduced to the variable's range for the small types (see value()).
 * NCW_INJECT=K:N:R:I adds 1 to element I of rank R's buffer of line N in case K (to show that the
 * differential test catches a wrong value; randprog.py picks an element no later write covers).
 * Exit status: 0 when every call succeeded, 1 when one failed, 2 on a usage or program error.
 */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include <ctype.h>
#include <dirent.h>
#include <mpi.h>
#include <pnetcdf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXTOK 64
#define MAXREQ 1024
#define MAXDIMS 8 /* (PnetCDF's NC_MAX_VAR_DIMS is INT_MAX) */

static int rank, nprocs, kase, line_no, failed;
static FILE *out;
static int inject_case = -1, inject_line, inject_rank, inject_elem;
static int reqs[MAXREQ], nreqs; /* this rank's pending nonblocking requests */
static void *held[MAXREQ];      /* and the buffers of its iputs */
static int nheld;

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "ncwriter: case %d line %d: ", kase, line_no);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
}

/* Records a failed call; true when it succeeded. */
static int ok(int err, const char *what) {
    if (err == NC_NOERR) return 1;
    fprintf(out, "op %d (%s): %s: %s\n", line_no, what, ncmpi_strerrno(err), ncmpi_strerror(err));
    failed = 1;
    return 0;
}

/* ---- names ------------------------------------------------------------------------------------ */

static const char *xnames[] = {"", "byte", "char", "short", "int", "float", "double",
                               "ubyte", "ushort", "uint", "int64", "uint64"}; /* by nc_type */

static nc_type xtype(const char *s) {
    for (int t = NC_BYTE; t <= NC_UINT64; t++)
        if (!strcmp(s, xnames[t])) return t;
    die("unknown type %s", s);
    return NC_NAT;
}

enum { M_TEXT, M_SCHAR, M_UCHAR, M_SHORT, M_USHORT, M_INT, M_UINT, M_LONG, M_FLOAT, M_DOUBLE, M_LONGLONG, M_ULONGLONG };
static const char *mnames[] = {"text", "schar", "uchar", "short", "ushort", "int", "uint", "long",
                               "float", "double", "longlong", "ulonglong"};
static const size_t msizes[] = {1, 1, 1, sizeof(short), sizeof(short), sizeof(int), sizeof(int), sizeof(long),
                                sizeof(float), sizeof(double), sizeof(long long), sizeof(long long)};

static MPI_Datatype mpi_type(int m) {
    const MPI_Datatype t[] = {MPI_CHAR, MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_SHORT, MPI_UNSIGNED_SHORT, MPI_INT,
                              MPI_UNSIGNED, MPI_LONG, MPI_FLOAT, MPI_DOUBLE, MPI_LONG_LONG_INT, MPI_UNSIGNED_LONG_LONG};
    return t[m];
}

static int mtype(const char *s) {
    for (int m = 0; m <= M_ULONGLONG; m++)
        if (!strcmp(s, mnames[m])) return m;
    die("unknown memory type %s", s);
    return 0;
}

/* Stores x as memory type m at p. */
static void store(int m, void *p, double x) {
    switch (m) {
    case M_TEXT: *(char *)p = (char)x; break;
    case M_SCHAR: *(signed char *)p = (signed char)x; break;
    case M_UCHAR: *(unsigned char *)p = (unsigned char)x; break;
    case M_SHORT: *(short *)p = (short)x; break;
    case M_USHORT: *(unsigned short *)p = (unsigned short)x; break;
    case M_INT: *(int *)p = (int)x; break;
    case M_UINT: *(unsigned *)p = (unsigned)x; break;
    case M_LONG: *(long *)p = (long)x; break;
    case M_FLOAT: *(float *)p = (float)x; break;
    case M_DOUBLE: *(double *)p = x; break;
    case M_LONGLONG: *(long long *)p = (long long)x; break;
    case M_ULONGLONG: *(unsigned long long *)p = (unsigned long long)x; break;
    }
}

/* The natural memory type of external type t (attributes and fill values are given in it). */
static int natural(nc_type t) {
    const int m[] = {0,       M_SCHAR,  M_TEXT,  M_SHORT,    M_INT,      M_FLOAT,
                     M_DOUBLE, M_UCHAR, M_USHORT, M_UINT, M_LONGLONG, M_ULONGLONG};
    return m[t];
}

/* The value of element i of the put of line `op` by rank r, in the range of external type t. */
static double value(nc_type t, int op, int r, MPI_Offset i) {
    const long long v = (long long)(kase % 100) * 100000 + op * 1000 + r * 100 + i % 100;
    switch (t) {
    case NC_CHAR: return 33 + v % 94; /* printable, never 0 */
    case NC_BYTE: return 1 + v % 126;
    case NC_UBYTE: return 1 + v % 254;
    case NC_SHORT: return 1 + v % 32000;
    case NC_USHORT: return 1 + v % 65000;
    default: return (double)v;
    }
}

/* ---- ids ------------------------------------------------------------------------------------------ */

static int varid(int ncid, const char *name) {
    if (!strcmp(name, "global")) return NC_GLOBAL;
    int v = -1;
    if (!ok(ncmpi_inq_varid(ncid, name, &v), "inq_varid")) return -2;
    return v;
}

/* "a,b,c" (or "." for none) into o[]; returns the number of entries. */
static int offsets(const char *s, MPI_Offset *o) {
    int n = 0;
    if (!strcmp(s, ".")) return 0;
    for (const char *p = s; *p; p++) {
        o[n++] = strtoll(p, (char **)&p, 10);
        if (*p != ',') break;
    }
    return n;
}

/* ---- the put of every kind and API ------------------------------------------------------------ */

enum { K_ALL, K_INDEP, K_IPUT, K_BPUT };
enum { A_VAR, A_VAR1, A_VARA, A_VARS };

#define TYPED(S, CT)                                                                                 \
    switch (kind * 4 + api) {                                                                        \
    case K_ALL * 4 + A_VAR: return ncmpi_put_var_##S##_all(ncid, v, (const CT *)b);                 \
    case K_ALL * 4 + A_VAR1: return ncmpi_put_var1_##S##_all(ncid, v, st, (const CT *)b);           \
    case K_ALL * 4 + A_VARA: return ncmpi_put_vara_##S##_all(ncid, v, st, ct, (const CT *)b);       \
    case K_ALL * 4 + A_VARS: return ncmpi_put_vars_##S##_all(ncid, v, st, ct, sd, (const CT *)b);   \
    case K_INDEP * 4 + A_VAR: return ncmpi_put_var_##S(ncid, v, (const CT *)b);                     \
    case K_INDEP * 4 + A_VAR1: return ncmpi_put_var1_##S(ncid, v, st, (const CT *)b);               \
    case K_INDEP * 4 + A_VARA: return ncmpi_put_vara_##S(ncid, v, st, ct, (const CT *)b);           \
    case K_INDEP * 4 + A_VARS: return ncmpi_put_vars_##S(ncid, v, st, ct, sd, (const CT *)b);       \
    case K_IPUT * 4 + A_VAR: return ncmpi_iput_var_##S(ncid, v, (const CT *)b, req);                \
    case K_IPUT * 4 + A_VAR1: return ncmpi_iput_var1_##S(ncid, v, st, (const CT *)b, req);          \
    case K_IPUT * 4 + A_VARA: return ncmpi_iput_vara_##S(ncid, v, st, ct, (const CT *)b, req);      \
    case K_IPUT * 4 + A_VARS: return ncmpi_iput_vars_##S(ncid, v, st, ct, sd, (const CT *)b, req);  \
    case K_BPUT * 4 + A_VAR: return ncmpi_bput_var_##S(ncid, v, (const CT *)b, req);                \
    case K_BPUT * 4 + A_VAR1: return ncmpi_bput_var1_##S(ncid, v, st, (const CT *)b, req);          \
    case K_BPUT * 4 + A_VARA: return ncmpi_bput_vara_##S(ncid, v, st, ct, (const CT *)b, req);      \
    case K_BPUT * 4 + A_VARS: return ncmpi_bput_vars_##S(ncid, v, st, ct, sd, (const CT *)b, req);  \
    }                                                                                                \
    break

static int put_typed(int kind, int api, int m, int ncid, int v, const MPI_Offset *st, const MPI_Offset *ct,
                     const MPI_Offset *sd, const void *b, int *req) {
    switch (m) {
    case M_TEXT: TYPED(text, char);
    case M_SCHAR: TYPED(schar, signed char);
    case M_UCHAR: TYPED(uchar, unsigned char);
    case M_SHORT: TYPED(short, short);
    case M_USHORT: TYPED(ushort, unsigned short);
    case M_INT: TYPED(int, int);
    case M_UINT: TYPED(uint, unsigned);
    case M_LONG: TYPED(long, long);
    case M_FLOAT: TYPED(float, float);
    case M_DOUBLE: TYPED(double, double);
    case M_LONGLONG: TYPED(longlong, long long);
    case M_ULONGLONG: TYPED(ulonglong, unsigned long long);
    }
    return NC_EINVAL;
}
#undef TYPED

/* The flexible API: the buffer described by an MPI datatype (bufcount 1, buftype t). */
static int put_flexible(int kind, int api, int ncid, int v, const MPI_Offset *st, const MPI_Offset *ct,
                        const MPI_Offset *sd, const void *b, MPI_Datatype t, int *req) {
    switch (kind * 4 + api) {
    case K_ALL * 4 + A_VAR: return ncmpi_put_var_all(ncid, v, b, 1, t);
    case K_ALL * 4 + A_VAR1: return ncmpi_put_var1_all(ncid, v, st, b, 1, t);
    case K_ALL * 4 + A_VARA: return ncmpi_put_vara_all(ncid, v, st, ct, b, 1, t);
    case K_ALL * 4 + A_VARS: return ncmpi_put_vars_all(ncid, v, st, ct, sd, b, 1, t);
    case K_INDEP * 4 + A_VAR: return ncmpi_put_var(ncid, v, b, 1, t);
    case K_INDEP * 4 + A_VAR1: return ncmpi_put_var1(ncid, v, st, b, 1, t);
    case K_INDEP * 4 + A_VARA: return ncmpi_put_vara(ncid, v, st, ct, b, 1, t);
    case K_INDEP * 4 + A_VARS: return ncmpi_put_vars(ncid, v, st, ct, sd, b, 1, t);
    case K_IPUT * 4 + A_VAR: return ncmpi_iput_var(ncid, v, b, 1, t, req);
    case K_IPUT * 4 + A_VAR1: return ncmpi_iput_var1(ncid, v, st, b, 1, t, req);
    case K_IPUT * 4 + A_VARA: return ncmpi_iput_vara(ncid, v, st, ct, b, 1, t, req);
    case K_IPUT * 4 + A_VARS: return ncmpi_iput_vars(ncid, v, st, ct, sd, b, 1, t, req);
    case K_BPUT * 4 + A_VAR: return ncmpi_bput_var(ncid, v, b, 1, t, req);
    case K_BPUT * 4 + A_VAR1: return ncmpi_bput_var1(ncid, v, st, b, 1, t, req);
    case K_BPUT * 4 + A_VARA: return ncmpi_bput_vara(ncid, v, st, ct, b, 1, t, req);
    case K_BPUT * 4 + A_VARS: return ncmpi_bput_vars(ncid, v, st, ct, sd, b, 1, t, req);
    }
    return NC_EINVAL;
}

/* put_all|put|iput|bput VAR API MEM|flex:MEM RANK=REGION...: the listed ranks put their region (REGION:
 * START for var1, START/COUNT for vara, START/COUNT/STRIDE for vars, * for var); in a put_all the
 * ranks not listed take part with an empty vara. Nonblocking requests wait for wait/wait_all. */
static void put(int ncid, int kind, int ntok, char **tok) {
    static const char *apis[] = {"var", "var1", "vara", "vars"};
    if (ntok < 4) die("%s needs VAR API MEM", tok[0]);
    int api = -1, flex = !strncmp(tok[3], "flex:", 5), m = mtype(tok[3] + (flex ? 5 : 0));
    for (int a = 0; a < 4; a++)
        if (!strcmp(tok[2], apis[a])) api = a;
    if (api < 0) die("unknown API %s", tok[2]);
    int v = varid(ncid, tok[1]), ndims = 0, dimids[MAXDIMS];
    nc_type t = NC_NAT;
    if (v < 0 || !ok(ncmpi_inq_varndims(ncid, v, &ndims), "inq_varndims")) return;
    if (ndims > MAXDIMS) die("%s has %d dimensions", tok[1], ndims);
    if (!ok(ncmpi_inq_var(ncid, v, NULL, &t, &ndims, dimids, NULL), "inq_var")) return;
    MPI_Offset st[MAXDIMS] = {0}, ct[MAXDIMS] = {0}, sd[MAXDIMS] = {0};
    const char *region = NULL;
    for (int i = 4; i < ntok; i++)
        if (atoi(tok[i]) == rank && strchr(tok[i], '=')) region = strchr(tok[i], '=') + 1;
    if (!region && kind != K_ALL) return; /* not this rank's put */
    int my_api = region ? api : A_VARA;   /* empty part of a collective put */
    MPI_Offset n = 1;
    if (region && api == A_VAR) {
        for (int d = 0; d < ndims; d++) {
            ok(ncmpi_inq_dimlen(ncid, dimids[d], &ct[d]), "inq_dimlen");
            n *= ct[d];
        }
    } else if (region) {
        char spec[256], *parts[3] = {spec, NULL, NULL};
        snprintf(spec, sizeof spec, "%s", region);
        for (int p = 1; p < 3; p++)
            if (parts[p - 1] && (parts[p] = strchr(parts[p - 1], '/'))) *parts[p]++ = 0;
        offsets(parts[0], st);
        if (api == A_VAR1) for (int d = 0; d < ndims; d++) ct[d] = 1;
        else if (!parts[1] || offsets(parts[1], ct) != ndims) die("region %s: need START/COUNT", region);
        if (api == A_VARS && (!parts[2] || offsets(parts[2], sd) != ndims)) die("region %s: need a stride", region);
        for (int d = 0; d < ndims; d++) n *= ct[d];
    } else {
        n = 0;
    }
    /* the buffer: n values (every second element with flex:, the gaps holding 0x5a bytes) */
    const size_t step = flex ? 2 : 1, size = msizes[m];
    unsigned char *buf = malloc(size * step * (size_t)(n + 1));
    memset(buf, 0x5a, size * step * (size_t)(n + 1));
    for (MPI_Offset i = 0; i < n; i++) {
        double x = value(t, line_no, rank, i);
        if (kase == inject_case && line_no == inject_line && rank == inject_rank && i == inject_elem) {
            x += 1;
            fprintf(stderr, "ncwriter: INJECTED a wrong value: case %d line %d rank %d element %lld\n", kase, line_no,
                    rank, (long long)i);
        }
        store(m, buf + size * step * (size_t)i, x);
    }
    int req = NC_REQ_NULL, err;
    if (flex) {
        MPI_Datatype vec;
        MPI_Type_vector((int)n, 1, 2, mpi_type(m), &vec);
        MPI_Type_commit(&vec);
        err = put_flexible(kind, my_api, ncid, v, st, ct, sd, buf, vec, &req);
        MPI_Type_free(&vec);
    } else {
        err = put_typed(kind, my_api, m, ncid, v, st, ct, sd, buf, &req);
    }
    if (ok(err, tok[0]) && (kind == K_IPUT || kind == K_BPUT)) {
        if (nreqs == MAXREQ) die("too many pending requests");
        reqs[nreqs++] = req;
    }
    /* a bput's values are copied at the call; an iput's are read at the wait: kept until then */
    if (kind == K_IPUT && err == NC_NOERR && nheld < MAXREQ) held[nheld++] = buf;
    else free(buf);
}

/* wait_all [ids] (collective; ids: the pending request ids, else NC_REQ_ALL) and wait RANKS (independent). */
static void wait_requests(int ncid, int collective, int ntok, char **tok) {
    int st[MAXREQ], err;
    if (!collective) {
        int mine = 0;
        for (char *p = tok[1]; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
            mine |= atoi(p) == rank;
        if (!mine) return;
        err = ncmpi_wait(ncid, nreqs, reqs, st);
    } else if (ntok > 1 && !strcmp(tok[1], "ids")) {
        err = ncmpi_wait_all(ncid, nreqs, reqs, st);
    } else {
        err = ncmpi_wait_all(ncid, NC_REQ_ALL, NULL, NULL);
        for (int i = 0; i < nreqs; i++) st[i] = NC_NOERR;
    }
    if (ok(err, tok[0]))
        for (int i = 0; i < nreqs; i++) ok(st[i], "request status");
    nreqs = 0;
    while (nheld) free(held[--nheld]);
}

/* ---- attributes ------------------------------------------------------------------------------- */

/* put_att VAR NAME TYPE VALUES (comma-separated numbers; for char, the text itself, '_' for a space) */
static void put_att(int ncid, char **tok) {
    int v = varid(ncid, tok[1]);
    nc_type t = xtype(tok[3]);
    if (v == -2) return;
    if (t == NC_CHAR) {
        for (char *p = tok[4]; *p; p++)
            if (*p == '_') *p = ' ';
        ok(ncmpi_put_att_text(ncid, v, tok[2], (MPI_Offset)strlen(tok[4]), tok[4]), "put_att");
        return;
    }
    double x[64];
    int n = 0, m = natural(t);
    for (const char *p = tok[4]; *p && n < 64; p++) {
        x[n++] = strtod(p, (char **)&p);
        if (*p != ',') break;
    }
    unsigned char buf[64 * 8];
    for (int i = 0; i < n; i++) store(m, buf + i * msizes[m], x[i]);
    ok(ncmpi_put_att(ncid, v, tok[2], t, n, buf), "put_att");
}

/* ---- one program -------------------------------------------------------------------------------- */

static void run(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) die("cannot read %s", path);
    char line[8192], name[64];
    int ncid = -1;
    kase = -1;
    line_no = 0;
    nreqs = 0;
    while (fgets(line, sizeof line, f)) {
        char *tok[MAXTOK];
        int ntok = 0;
        line_no++;
        for (char *p = strtok(line, " \t\r\n"); p && ntok < MAXTOK; p = strtok(NULL, " \t\r\n")) tok[ntok++] = p;
        if (!ntok || tok[0][0] == '#') continue;
        const char *op = tok[0];
#define NEED(k)                                                                                         \
    if (ntok < (k) + 1) die("%s needs %d arguments", op, k)
        if (!strcmp(op, "case")) {
            NEED(1);
            kase = atoi(tok[1]);
            fprintf(out, "case %d\n", kase);
        } else if (!strcmp(op, "create")) {
            NEED(1);
            const int fmt = !strcmp(tok[1], "cdf5") ? NC_64BIT_DATA : !strcmp(tok[1], "cdf2") ? NC_64BIT_OFFSET : 0;
            /* ROMIO writes only what the program writes: no data sieving (its read-modify-write of an
             * extent loses other ranks' concurrent writes inside it, tests/transfer/prop.py) and no
             * collective buffering (its aggregators write the holes between the ranks' pieces from a
             * stale buffer where they lie beyond the end of the file: unwritten record elements would
             * read as bytes of an earlier collective write; PnetCDF 1.12.3, Open MPI 4.1's ROMIO) */
            MPI_Info info;
            MPI_Info_create(&info);
            MPI_Info_set(info, "romio_ds_write", "disable");
            MPI_Info_set(info, "romio_cb_write", "disable");
            snprintf(name, sizeof name, "case.%d.nc", kase);
            if (!ok(ncmpi_create(MPI_COMM_WORLD, name, NC_CLOBBER | fmt, info, &ncid), "create")) ncid = -1;
            MPI_Info_free(&info);
        } else if (ncid < 0) {
            continue; /* nothing to do without a file */
        } else if (!strcmp(op, "set_fill")) {
            NEED(1);
            int old;
            ok(ncmpi_set_fill(ncid, !strcmp(tok[1], "fill") ? NC_FILL : NC_NOFILL, &old), op);
        } else if (!strcmp(op, "def_dim")) {
            NEED(2);
            int d;
            ok(ncmpi_def_dim(ncid, tok[1], !strcmp(tok[2], "unlim") ? NC_UNLIMITED : atoll(tok[2]), &d), op);
        } else if (!strcmp(op, "def_var")) {
            NEED(3);
            int dimids[MAXDIMS], n = 0, v;
            if (strcmp(tok[3], "-"))
                for (char *p = strtok(tok[3], ","); p; p = strtok(NULL, ","))
                    if (!ok(ncmpi_inq_dimid(ncid, p, &dimids[n++]), "inq_dimid")) n = -100;
            if (n >= 0) ok(ncmpi_def_var(ncid, tok[1], xtype(tok[2]), n, dimids, &v), op);
        } else if (!strcmp(op, "put_att")) {
            NEED(4);
            put_att(ncid, tok);
        } else if (!strcmp(op, "del_att")) {
            NEED(2);
            int v = varid(ncid, tok[1]);
            if (v != -2) ok(ncmpi_del_att(ncid, v, tok[2]), op);
        } else if (!strcmp(op, "rename_att")) {
            NEED(3);
            int v = varid(ncid, tok[1]);
            if (v != -2) ok(ncmpi_rename_att(ncid, v, tok[2], tok[3]), op);
        } else if (!strcmp(op, "rename_var")) {
            NEED(2);
            int v = varid(ncid, tok[1]);
            if (v != -2) ok(ncmpi_rename_var(ncid, v, tok[2]), op);
        } else if (!strcmp(op, "rename_dim")) {
            NEED(2);
            int d;
            if (ok(ncmpi_inq_dimid(ncid, tok[1], &d), "inq_dimid")) ok(ncmpi_rename_dim(ncid, d, tok[2]), op);
        } else if (!strcmp(op, "def_var_fill")) {
            NEED(2);
            int v = varid(ncid, tok[1]);
            nc_type t;
            unsigned char fill[8];
            if (v < 0 || !ok(ncmpi_inq_vartype(ncid, v, &t), "inq_vartype")) continue;
            if (ntok > 3) store(natural(t), fill, strtod(tok[3], NULL));
            ok(ncmpi_def_var_fill(ncid, v, !strcmp(tok[2], "nofill"), ntok > 3 ? fill : NULL), op);
        } else if (!strcmp(op, "enddef")) {
            ok(ncmpi_enddef(ncid), op);
        } else if (!strcmp(op, "redef")) {
            ok(ncmpi_redef(ncid), op);
        } else if (!strcmp(op, "begin_indep")) {
            ok(ncmpi_begin_indep_data(ncid), op);
        } else if (!strcmp(op, "end_indep")) {
            ok(ncmpi_end_indep_data(ncid), op);
        } else if (!strcmp(op, "put_all") || !strcmp(op, "put") || !strcmp(op, "iput") || !strcmp(op, "bput")) {
            put(ncid, op[0] == 'i' ? K_IPUT : op[0] == 'b' ? K_BPUT : op[3] == '_' ? K_ALL : K_INDEP, ntok, tok);
        } else if (!strcmp(op, "wait_all")) {
            wait_requests(ncid, 1, ntok, tok);
        } else if (!strcmp(op, "wait")) {
            NEED(1);
            wait_requests(ncid, 0, ntok, tok);
        } else if (!strcmp(op, "fill_var_rec")) {
            NEED(2);
            int v = varid(ncid, tok[1]);
            if (v >= 0) ok(ncmpi_fill_var_rec(ncid, v, atoll(tok[2])), op);
        } else if (!strcmp(op, "records")) { /* what PnetCDF agreed on, or this rank's own count */
            int unlim = -1;
            MPI_Offset n = -1;
            if (ok(ncmpi_inq_unlimdim(ncid, &unlim), "inq_unlimdim") && unlim >= 0 &&
                ok(ncmpi_inq_dimlen(ncid, unlim, &n), "inq_dimlen"))
                fprintf(out, "records %d: %lld\n", line_no, (long long)n);
        } else if (!strcmp(op, "flush")) {
            ok(ncmpi_flush(ncid), op);
        } else if (!strcmp(op, "barrier")) {
            MPI_Barrier(MPI_COMM_WORLD);
        } else if (!strcmp(op, "buffer_attach")) {
            NEED(1);
            ok(ncmpi_buffer_attach(ncid, atoll(tok[1])), op);
        } else if (!strcmp(op, "buffer_detach")) {
            ok(ncmpi_buffer_detach(ncid), op);
        } else if (!strcmp(op, "close")) {
            ok(ncmpi_close(ncid), op);
            ncid = -1;
        } else {
            die("unknown operation %s", op);
        }
#undef NEED
    }
    fclose(f);
    if (ncid >= 0) die("the program does not close its file");
    fprintf(out, "end %d\n", kase);
    fflush(out);
}

/* prog.<K>.txt files of a directory, by K */
static int by_case(const void *a, const void *b) {
    return atoi(strchr(*(char *const *)a, '.') + 1) - atoi(strchr(*(char *const *)b, '.') + 1);
}

static void run_dir(const char *dir) {
    DIR *d = opendir(dir);
    char **names = NULL;
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (!strncmp(e->d_name, "prog.", 5) && isdigit((unsigned char)e->d_name[5])) {
            names = realloc(names, sizeof *names * (size_t)(n + 1));
            names[n++] = strdup(e->d_name);
        }
    if (d) closedir(d);
    qsort(names, (size_t)n, sizeof *names, by_case);
    for (int i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        run(path);
        free(names[i]);
    }
    free(names);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc < 3) {
        if (rank == 0) fprintf(stderr, "usage: ncwriter OUT PROGRAM|DIR...\n");
        MPI_Finalize();
        return 2;
    }
    const char *inject = getenv("NCW_INJECT");
    if (inject && *inject &&
        sscanf(inject, "%d:%d:%d:%d", &inject_case, &inject_line, &inject_rank, &inject_elem) != 4)
        die("NCW_INJECT=%s: expected K:N:R:I", inject);
    char name[4096];
    snprintf(name, sizeof name, "%s.%d", argv[1], rank);
    if (!(out = fopen(name, "w"))) die("cannot write %s", name);
    for (int i = 2; i < argc; i++) {
        DIR *d = opendir(argv[i]);
        if (d) closedir(d), run_dir(argv[i]);
        else run(argv[i]);
    }
    fclose(out);
    int any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return any ? 1 : 0;
}

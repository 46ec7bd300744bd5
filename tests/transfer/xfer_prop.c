/*
 * Property test of transfer mode, with file mode as the oracle: one MPI program that is either the
 * writer or the reader of a sequence of randomly generated cases (scenario.h), launched as two
 * components by dtfrun (see prop.py). Per case the writer creates DIR/case.<K>.nc, defines, puts with
 * every access kind, calls dtf_transfer and closes; the reader opens it, inquires, gets with every
 * access kind, calls dtf_transfer and closes. Same code for mode="file" and mode="transfer".
 *
 * Every rank writes what it observed (return codes, inquiry results, the raw bytes of every get
 * buffer including the sentinel-filled padding and guards) to DIR/dump.<K>.<rank> (reader) or
 * DIR/wdump.<K>.<rank> (writer), one line per call; prop.py compares the dumps of the two modes byte
 * for byte. Independently of dtf, every rank also checks what it observed against the scenario
 * (values, fill values, conversions, return codes) and prints "CHECK-FAIL case=K ..." lines.
 *
 * A second reader component ("reader2", a writer=/readers= rule) reads the same files with the
 * reader ranks and accesses the scenario has for N of them (the writers' part does not depend on N),
 * dumped to DIR/dump2.<K>.<rank>.
 *
 * usage: xfer_prop writer|reader|reader2 CONFIG DIR SEED|fixed FIRST NCASES M N
 *        (CONFIG "-": no dtf at all, plain PnetCDF; run the writer to completion, then the reader)
 *        xfer_prop describe SEED|fixed CASE M N        (prints the scenario; no MPI)
 *        xfer_prop stats SEED|fixed NCASES M N         (feature counts over cases 0..NCASES-1; no MPI)
 * Exit status: 0 all checks passed, 1 a check failed, 2 usage or setup error.
 */
#include <mpi.h>
#include <pnetcdf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtf.h"
#include "scenario.h"

static int rank, nranks, is_writer, kase, use_dtf = 1;
static int file_mode; /* XFER_FILE_MODE=1 (prop.py): the file's mode is "file", the real PnetCDF reads */
/* XFER_REPEAT=R: every case runs R times in a row on one file (sessions 1..R of one path), for replay
 * (replay_io=1). The file is then named after the case in letters (case.<letters>.nc), so that no
 * two cases share a replay plan (dtf wildcards the digits of names), and each repeat's dump is
 * appended to the case's dump. */
static int repeat = 1, rep;
static const char *role;
static long nfail, case_fails;
static int trace_calls; /* XFER_TRACE=1: print every data call before it is made (to find hangs) */
/* XFER_INJECT=value:K  the writer puts one wrong value in case K (element 0 of the first piece, or of the
 *                       first layer over a piece if there is one: a put whose values the file keeps);
 * XFER_INJECT=padding:K  the reader overwrites a guard byte of its first get buffer in case K.
 * Used by prop.py --inject to show that the self-check and the dump comparison catch such faults. */
static int inject_kind, inject_case = -1;

static void trace(const char *fmt, ...) {
    if (!trace_calls) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "trace %s %d case %d: %s\n", role, rank, kase, msg);
    fflush(stderr);
}

/* ---------------------------------------------------------------------------------------------- */
/* dump text and self-check reporting                                                             */

/* What a request id holds before its post: neither NC_REQ_NULL nor an id PnetCDF gives. */
#define REQ_UNSET 424242

typedef struct {
    char *s;
    size_t n, cap;
} sbuf_t;

static void sb_grow(sbuf_t *b, size_t need) {
    if (b->n + need + 1 <= b->cap) return;
    while (b->n + need + 1 > b->cap) b->cap = b->cap ? 2 * b->cap : 4096;
    b->s = realloc(b->s, b->cap);
}

static void sb_printf(sbuf_t *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    sb_grow(b, (size_t)k);
    va_start(ap, fmt);
    vsnprintf(b->s + b->n, (size_t)k + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)k;
}

static void sb_hex(sbuf_t *b, const void *p, size_t n) {
    static const char hx[] = "0123456789abcdef";
    const unsigned char *c = p;
    sb_grow(b, 2 * n);
    for (size_t i = 0; i < n; i++) {
        b->s[b->n++] = hx[c[i] >> 4];
        b->s[b->n++] = hx[c[i] & 15];
    }
    b->s[b->n] = 0;
}

static void fail(const char *fmt, ...) {
    nfail++;
    if (++case_fails > 8) return; /* the first few per case are enough */
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    printf("CHECK-FAIL case=%d %s rank=%d: %s\n", kase, role, rank, msg);
    fflush(stdout);
}

/* Record a return code in the dump and check it. */
static int rec_rc(sbuf_t *d, int rc, int expected, const char *fmt, ...) {
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    trace("done: %s rc=%d", what, rc);
    sb_printf(d, "%s rc=%d\n", what, rc);
    if (rc != expected)
        fail("%s returned %d (%s), expected %d (%s)%s%s", what, rc, ncmpi_strerror(rc), expected,
             ncmpi_strerror(expected), rc < -1000 ? ": " : "", rc < -1000 ? dtf_errmsg() : "");
    return rc;
}

/* ---------------------------------------------------------------------------------------------- */
/* typed and flexible PnetCDF calls                                                               */

static MPI_Datatype mpi_type(int mt) {
    switch (mt) {
    case MT_TEXT: return MPI_CHAR;
    case MT_SCHAR: return MPI_SIGNED_CHAR;
    case MT_UCHAR: return MPI_UNSIGNED_CHAR;
    case MT_SHORT: return MPI_SHORT;
    case MT_USHORT: return MPI_UNSIGNED_SHORT;
    case MT_INT: return MPI_INT;
    case MT_UINT: return MPI_UNSIGNED;
    case MT_LONG: return MPI_LONG;
    case MT_FLOAT: return MPI_FLOAT;
    case MT_DOUBLE: return MPI_DOUBLE;
    case MT_LONGLONG: return MPI_LONG_LONG_INT;
    default: return MPI_UNSIGNED_LONG_LONG;
    }
}

#define TYPED(F, SFX, ...)                                                                           \
    switch (mt) {                                                                                    \
    case MT_TEXT: return F##_text##SFX(__VA_ARGS__);                                                 \
    case MT_SCHAR: return F##_schar##SFX(__VA_ARGS__);                                               \
    case MT_UCHAR: return F##_uchar##SFX(__VA_ARGS__);                                               \
    case MT_SHORT: return F##_short##SFX(__VA_ARGS__);                                               \
    case MT_USHORT: return F##_ushort##SFX(__VA_ARGS__);                                             \
    case MT_INT: return F##_int##SFX(__VA_ARGS__);                                                   \
    case MT_UINT: return F##_uint##SFX(__VA_ARGS__);                                                 \
    case MT_LONG: return F##_long##SFX(__VA_ARGS__);                                                 \
    case MT_FLOAT: return F##_float##SFX(__VA_ARGS__);                                               \
    case MT_DOUBLE: return F##_double##SFX(__VA_ARGS__);                                             \
    case MT_LONGLONG: return F##_longlong##SFX(__VA_ARGS__);                                         \
    default: return F##_ulonglong##SFX(__VA_ARGS__);                                                 \
    }

/* A request as issued: region, buffer, datatype. */
typedef struct {
    const req_t *q;
    int varid;
    MPI_Offset st[SC_MAXDIMS], ct[SC_MAXDIMS], sd[SC_MAXDIMS], im[SC_MAXDIMS];
    layout_t L;
    unsigned char *mem; /* guard + buffer + guard */
    size_t total;
    unsigned char *buf;
    MPI_Datatype bt;
    int own_bt;
    MPI_Offset bufcount;
    int rc, reqid, status, has_status;
    MPI_Offset **vst, **vct, *vflat; /* varn: the starts and counts arrays */
    int posted_id;            /* the request id the iput/iget/bput returned */
    int wait_req;             /* the id after a wait with a list (has_status) */
    int cancel_rc, cancel_status, cancel_req;  /* ncmpi_cancel of a cancelled request, its id after */
    int stale_rc, stale_status, stale_req;     /* the second cancel with the saved (stale) id */
    int erange; /* the expected data contains a value out of the memory type's range */
    int status_unsure; /* its wait's statuses are PnetCDF 1.12.3's guess (see complete()) */
    unsigned char *expect; /* reader: the expected buffer content, guards included */
    char label[512];
} op_t;

static int put_typed(int ncid, int varid, int api, int mode, int mt, const op_t *o, int *req) {
    const void *b = o->buf;
    switch (mode * 8 + api) {
    case MODE_COLL * 8 + API_VAR: TYPED(ncmpi_put_var, _all, ncid, varid, b)
    case MODE_COLL * 8 + API_VAR1: TYPED(ncmpi_put_var1, _all, ncid, varid, o->st, b)
    case MODE_COLL * 8 + API_VARA: TYPED(ncmpi_put_vara, _all, ncid, varid, o->st, o->ct, b)
    case MODE_COLL * 8 + API_VARS: TYPED(ncmpi_put_vars, _all, ncid, varid, o->st, o->ct, o->sd, b)
    case MODE_COLL * 8 + API_VARM: TYPED(ncmpi_put_varm, _all, ncid, varid, o->st, o->ct, o->sd, o->im, b)
    case MODE_INDEP * 8 + API_VAR: TYPED(ncmpi_put_var, , ncid, varid, b)
    case MODE_INDEP * 8 + API_VAR1: TYPED(ncmpi_put_var1, , ncid, varid, o->st, b)
    case MODE_INDEP * 8 + API_VARA: TYPED(ncmpi_put_vara, , ncid, varid, o->st, o->ct, b)
    case MODE_INDEP * 8 + API_VARS: TYPED(ncmpi_put_vars, , ncid, varid, o->st, o->ct, o->sd, b)
    case MODE_INDEP * 8 + API_VARM: TYPED(ncmpi_put_varm, , ncid, varid, o->st, o->ct, o->sd, o->im, b)
    case MODE_NB * 8 + API_VAR: TYPED(ncmpi_iput_var, , ncid, varid, b, req)
    case MODE_NB * 8 + API_VAR1: TYPED(ncmpi_iput_var1, , ncid, varid, o->st, b, req)
    case MODE_NB * 8 + API_VARA: TYPED(ncmpi_iput_vara, , ncid, varid, o->st, o->ct, b, req)
    case MODE_NB * 8 + API_VARS: TYPED(ncmpi_iput_vars, , ncid, varid, o->st, o->ct, o->sd, b, req)
    case MODE_NB * 8 + API_VARM: TYPED(ncmpi_iput_varm, , ncid, varid, o->st, o->ct, o->sd, o->im, b, req)
    case MODE_BPUT * 8 + API_VAR: TYPED(ncmpi_bput_var, , ncid, varid, b, req)
    case MODE_BPUT * 8 + API_VAR1: TYPED(ncmpi_bput_var1, , ncid, varid, o->st, b, req)
    case MODE_BPUT * 8 + API_VARA: TYPED(ncmpi_bput_vara, , ncid, varid, o->st, o->ct, b, req)
    case MODE_BPUT * 8 + API_VARS: TYPED(ncmpi_bput_vars, , ncid, varid, o->st, o->ct, o->sd, b, req)
    case MODE_BPUT * 8 + API_VARM: TYPED(ncmpi_bput_varm, , ncid, varid, o->st, o->ct, o->sd, o->im, b, req)
    case MODE_COLL * 8 + API_VARN: TYPED(ncmpi_put_varn, _all, ncid, varid, o->q->nbox, o->vst, o->vct, b)
    case MODE_INDEP * 8 + API_VARN: TYPED(ncmpi_put_varn, , ncid, varid, o->q->nbox, o->vst, o->vct, b)
    case MODE_NB * 8 + API_VARN: TYPED(ncmpi_iput_varn, , ncid, varid, o->q->nbox, o->vst, o->vct, b, req)
    case MODE_BPUT * 8 + API_VARN: TYPED(ncmpi_bput_varn, , ncid, varid, o->q->nbox, o->vst, o->vct, b, req)
    }
    return -1;
}

static int get_typed(int ncid, int varid, int api, int mode, int mt, op_t *o, int *req) {
    void *b = o->buf;
    switch (mode * 8 + api) {
    case MODE_COLL * 8 + API_VAR: TYPED(ncmpi_get_var, _all, ncid, varid, b)
    case MODE_COLL * 8 + API_VAR1: TYPED(ncmpi_get_var1, _all, ncid, varid, o->st, b)
    case MODE_COLL * 8 + API_VARA: TYPED(ncmpi_get_vara, _all, ncid, varid, o->st, o->ct, b)
    case MODE_COLL * 8 + API_VARS: TYPED(ncmpi_get_vars, _all, ncid, varid, o->st, o->ct, o->sd, b)
    case MODE_COLL * 8 + API_VARM: TYPED(ncmpi_get_varm, _all, ncid, varid, o->st, o->ct, o->sd, o->im, b)
    case MODE_INDEP * 8 + API_VAR: TYPED(ncmpi_get_var, , ncid, varid, b)
    case MODE_INDEP * 8 + API_VAR1: TYPED(ncmpi_get_var1, , ncid, varid, o->st, b)
    case MODE_INDEP * 8 + API_VARA: TYPED(ncmpi_get_vara, , ncid, varid, o->st, o->ct, b)
    case MODE_INDEP * 8 + API_VARS: TYPED(ncmpi_get_vars, , ncid, varid, o->st, o->ct, o->sd, b)
    case MODE_INDEP * 8 + API_VARM: TYPED(ncmpi_get_varm, , ncid, varid, o->st, o->ct, o->sd, o->im, b)
    case MODE_NB * 8 + API_VAR: TYPED(ncmpi_iget_var, , ncid, varid, b, req)
    case MODE_NB * 8 + API_VAR1: TYPED(ncmpi_iget_var1, , ncid, varid, o->st, b, req)
    case MODE_NB * 8 + API_VARA: TYPED(ncmpi_iget_vara, , ncid, varid, o->st, o->ct, b, req)
    case MODE_NB * 8 + API_VARS: TYPED(ncmpi_iget_vars, , ncid, varid, o->st, o->ct, o->sd, b, req)
    case MODE_NB * 8 + API_VARM: TYPED(ncmpi_iget_varm, , ncid, varid, o->st, o->ct, o->sd, o->im, b, req)
    case MODE_COLL * 8 + API_VARN: TYPED(ncmpi_get_varn, _all, ncid, varid, o->q->nbox, o->vst, o->vct, b)
    case MODE_INDEP * 8 + API_VARN: TYPED(ncmpi_get_varn, , ncid, varid, o->q->nbox, o->vst, o->vct, b)
    case MODE_NB * 8 + API_VARN: TYPED(ncmpi_iget_varn, , ncid, varid, o->q->nbox, o->vst, o->vct, b, req)
    }
    return -1;
}

static int put_flex(int ncid, int varid, int api, int mode, const op_t *o, int *req) {
    const void *b = o->buf;
    MPI_Offset n = o->bufcount;
    MPI_Datatype t = o->bt;
    switch (mode * 8 + api) {
    case MODE_COLL * 8 + API_VAR: return ncmpi_put_var_all(ncid, varid, b, n, t);
    case MODE_COLL * 8 + API_VAR1: return ncmpi_put_var1_all(ncid, varid, o->st, b, n, t);
    case MODE_COLL * 8 + API_VARA: return ncmpi_put_vara_all(ncid, varid, o->st, o->ct, b, n, t);
    case MODE_COLL * 8 + API_VARS: return ncmpi_put_vars_all(ncid, varid, o->st, o->ct, o->sd, b, n, t);
    case MODE_COLL * 8 + API_VARM: return ncmpi_put_varm_all(ncid, varid, o->st, o->ct, o->sd, o->im, b, n, t);
    case MODE_INDEP * 8 + API_VAR: return ncmpi_put_var(ncid, varid, b, n, t);
    case MODE_INDEP * 8 + API_VAR1: return ncmpi_put_var1(ncid, varid, o->st, b, n, t);
    case MODE_INDEP * 8 + API_VARA: return ncmpi_put_vara(ncid, varid, o->st, o->ct, b, n, t);
    case MODE_INDEP * 8 + API_VARS: return ncmpi_put_vars(ncid, varid, o->st, o->ct, o->sd, b, n, t);
    case MODE_INDEP * 8 + API_VARM: return ncmpi_put_varm(ncid, varid, o->st, o->ct, o->sd, o->im, b, n, t);
    case MODE_NB * 8 + API_VAR: return ncmpi_iput_var(ncid, varid, b, n, t, req);
    case MODE_NB * 8 + API_VAR1: return ncmpi_iput_var1(ncid, varid, o->st, b, n, t, req);
    case MODE_NB * 8 + API_VARA: return ncmpi_iput_vara(ncid, varid, o->st, o->ct, b, n, t, req);
    case MODE_NB * 8 + API_VARS: return ncmpi_iput_vars(ncid, varid, o->st, o->ct, o->sd, b, n, t, req);
    case MODE_NB * 8 + API_VARM: return ncmpi_iput_varm(ncid, varid, o->st, o->ct, o->sd, o->im, b, n, t, req);
    case MODE_BPUT * 8 + API_VAR: return ncmpi_bput_var(ncid, varid, b, n, t, req);
    case MODE_BPUT * 8 + API_VAR1: return ncmpi_bput_var1(ncid, varid, o->st, b, n, t, req);
    case MODE_BPUT * 8 + API_VARA: return ncmpi_bput_vara(ncid, varid, o->st, o->ct, b, n, t, req);
    case MODE_BPUT * 8 + API_VARS: return ncmpi_bput_vars(ncid, varid, o->st, o->ct, o->sd, b, n, t, req);
    case MODE_BPUT * 8 + API_VARM: return ncmpi_bput_varm(ncid, varid, o->st, o->ct, o->sd, o->im, b, n, t, req);
    case MODE_COLL * 8 + API_VARN: return ncmpi_put_varn_all(ncid, varid, o->q->nbox, o->vst, o->vct, b, n, t);
    case MODE_INDEP * 8 + API_VARN: return ncmpi_put_varn(ncid, varid, o->q->nbox, o->vst, o->vct, b, n, t);
    case MODE_NB * 8 + API_VARN: return ncmpi_iput_varn(ncid, varid, o->q->nbox, o->vst, o->vct, b, n, t, req);
    case MODE_BPUT * 8 + API_VARN: return ncmpi_bput_varn(ncid, varid, o->q->nbox, o->vst, o->vct, b, n, t, req);
    }
    return -1;
}

static int get_flex(int ncid, int varid, int api, int mode, op_t *o, int *req) {
    void *b = o->buf;
    MPI_Offset n = o->bufcount;
    MPI_Datatype t = o->bt;
    switch (mode * 8 + api) {
    case MODE_COLL * 8 + API_VAR: return ncmpi_get_var_all(ncid, varid, b, n, t);
    case MODE_COLL * 8 + API_VAR1: return ncmpi_get_var1_all(ncid, varid, o->st, b, n, t);
    case MODE_COLL * 8 + API_VARA: return ncmpi_get_vara_all(ncid, varid, o->st, o->ct, b, n, t);
    case MODE_COLL * 8 + API_VARS: return ncmpi_get_vars_all(ncid, varid, o->st, o->ct, o->sd, b, n, t);
    case MODE_COLL * 8 + API_VARM: return ncmpi_get_varm_all(ncid, varid, o->st, o->ct, o->sd, o->im, b, n, t);
    case MODE_INDEP * 8 + API_VAR: return ncmpi_get_var(ncid, varid, b, n, t);
    case MODE_INDEP * 8 + API_VAR1: return ncmpi_get_var1(ncid, varid, o->st, b, n, t);
    case MODE_INDEP * 8 + API_VARA: return ncmpi_get_vara(ncid, varid, o->st, o->ct, b, n, t);
    case MODE_INDEP * 8 + API_VARS: return ncmpi_get_vars(ncid, varid, o->st, o->ct, o->sd, b, n, t);
    case MODE_INDEP * 8 + API_VARM: return ncmpi_get_varm(ncid, varid, o->st, o->ct, o->sd, o->im, b, n, t);
    case MODE_NB * 8 + API_VAR: return ncmpi_iget_var(ncid, varid, b, n, t, req);
    case MODE_NB * 8 + API_VAR1: return ncmpi_iget_var1(ncid, varid, o->st, b, n, t, req);
    case MODE_NB * 8 + API_VARA: return ncmpi_iget_vara(ncid, varid, o->st, o->ct, b, n, t, req);
    case MODE_NB * 8 + API_VARS: return ncmpi_iget_vars(ncid, varid, o->st, o->ct, o->sd, b, n, t, req);
    case MODE_NB * 8 + API_VARM: return ncmpi_iget_varm(ncid, varid, o->st, o->ct, o->sd, o->im, b, n, t, req);
    case MODE_COLL * 8 + API_VARN: return ncmpi_get_varn_all(ncid, varid, o->q->nbox, o->vst, o->vct, b, n, t);
    case MODE_INDEP * 8 + API_VARN: return ncmpi_get_varn(ncid, varid, o->q->nbox, o->vst, o->vct, b, n, t);
    case MODE_NB * 8 + API_VARN: return ncmpi_iget_varn(ncid, varid, o->q->nbox, o->vst, o->vct, b, n, t, req);
    }
    return -1;
}

/* ---------------------------------------------------------------------------------------------- */
/* preparing requests                                                                             */

/* Build the MPI datatype of a flexible request from its parameters (the layout computed in
 * scenario.c from the same parameters is what the self-check expects). */
static void make_buftype(const scen_t *s, op_t *o) {
    const req_t *q = o->q;
    MPI_Datatype base = mpi_type(o->L.mt);
    MPI_Offset n = o->L.n;
    int nd = s->vars[q->var].ndims;
    o->own_bt = 0;
    o->bt = base;
    o->bufcount = o->L.bufcount_elems;
    switch (q->flex) {
    case FX_NEG1: o->bufcount = -1; break;
    case FX_NULL: o->bt = MPI_DATATYPE_NULL; break;
    case FX_SUBARRAY: {
        int sizes[SC_MAXDIMS], sub[SC_MAXDIMS], starts[SC_MAXDIMS];
        for (int i = 0; i < nd; i++) {
            sub[i] = (int)o->ct[i];
            sizes[i] = sub[i] + 2 * q->fxparam;
            starts[i] = q->fxparam;
        }
        MPI_Type_create_subarray(nd, sizes, sub, starts, MPI_ORDER_C, base, &o->bt);
        o->own_bt = 1;
        o->bufcount = 1;
        break;
    }
    case FX_VECTOR:
        MPI_Type_vector((int)n, 1, q->fxparam, base, &o->bt);
        o->own_bt = 1;
        o->bufcount = 1;
        break;
    case FX_CONTIG:
        MPI_Type_contiguous(q->fxparam, base, &o->bt);
        o->own_bt = 1;
        o->bufcount = n / q->fxparam;
        break;
    case FX_RESIZED:
        MPI_Type_create_resized(base, 0, (MPI_Aint)q->fxparam * mt_size(o->L.mt), &o->bt);
        o->own_bt = 1;
        o->bufcount = n;
        break;
    case FX_INDEXED: {
        int *displs = malloc(sizeof(int) * (size_t)n);
        for (MPI_Offset j = 0; j < n; j++) displs[j] = (int)((n - 1 - j) * q->fxparam);
        MPI_Type_create_indexed_block((int)n, 1, displs, base, &o->bt);
        free(displs);
        o->own_bt = 1;
        o->bufcount = 1;
        break;
    }
    default: break;
    }
    if (o->own_bt) MPI_Type_commit(&o->bt);
}

static void op_prepare(const scen_t *s, const req_t *q, op_t *o) {
    memset(o, 0, sizeof *o);
    o->q = q;
    o->varid = q->err == ERR_NOTVAR ? 99 : q->var;
    req_region(s, q, o->st, o->ct, o->sd);
    memcpy(o->im, q->imap, sizeof o->im);
    layout_make(s, q, &o->L);
    o->total = 2 * SC_GUARD + o->L.bytes;
    o->mem = malloc(o->total);
    for (size_t i = 0; i < o->total; i++) o->mem[i] = sentinel_byte(i);
    o->buf = o->mem + SC_GUARD;
    o->reqid = REQ_UNSET;
    if (q->api == API_VARN && q->nbox > 0) { /* num=0: starts and counts NULL */
        o->vflat = malloc(sizeof(MPI_Offset) * 2 * SC_MAXDIMS * (size_t)q->nbox);
        o->vst = malloc(sizeof(MPI_Offset *) * (size_t)q->nbox);
        o->vct = q->nullcounts ? NULL : malloc(sizeof(MPI_Offset *) * (size_t)q->nbox);
        for (int b = 0; b < q->nbox; b++) {
            MPI_Offset *st = o->vflat + 2 * SC_MAXDIMS * b, *ct = st + SC_MAXDIMS;
            memcpy(st, s->boxes[q->box0 + b].start, sizeof(MPI_Offset) * SC_MAXDIMS);
            memcpy(ct, s->boxes[q->box0 + b].count, sizeof(MPI_Offset) * SC_MAXDIMS);
            o->vst[b] = st;
            if (o->vct) o->vct[b] = ct;
        }
    }
    if (q->flex != FX_NONE) make_buftype(s, o);
    req_describe(s, q, o->label, sizeof o->label);
}

static void op_release(op_t *o) {
    if (o->own_bt) MPI_Type_free(&o->bt);
    free(o->vst);
    free(o->vct);
    free(o->vflat);
    layout_free(&o->L);
    free(o->mem);
    free(o->expect);
}

/* The expected buffer content of a request (guards included); sets o->erange. */
static unsigned char *op_expected(const scen_t *s, op_t *o, int from_file) {
    unsigned char *e = malloc(o->total);
    for (size_t i = 0; i < o->total; i++) e[i] = sentinel_byte(i);
    o->erange = 0;
    if (o->q->err || o->q->zero || (from_file && o->q->cancel)) return e; /* a cancelled get reads nothing */
    for (MPI_Offset k = 0; k < o->L.n; k++) {
        MPI_Offset idx = req_element_index(s, o->q, o->st, o->ct, o->sd, k);
        num_t x = from_file ? scen_expected(s, o->q->var, idx) : req_put_value(s, o->q, idx);
        if (num_to_mem(x, o->L.mt, e + SC_GUARD + o->L.off[k]) == NC_ERANGE) o->erange = 1;
    }
    return e;
}

/* A zero-length participation request of a collective round on variable v. PnetCDF needs every rank
 * of a collective call to take the same path: a rank that writes a record variable synchronizes the
 * record count afterwards and one that writes a fixed-size variable does not, and a zero-request varn
 * call is a different collective from a vara call; both deadlock. So the collective varn requests on
 * a variable have rounds of their own, where a rank without one calls varn with num=0 on the same
 * variable; in the other rounds the zero-length request is a vara with zero counts on the same
 * variable, or, for a scalar (which cannot have zero counts), on another fixed-size variable (the
 * generator makes sure there is one). */
static void zero_req(const scen_t *s, req_t *z, int mode, int v, int api) {
    memset(z, 0, sizeof *z);
    z->zero = 1;
    z->rank = rank;
    z->mode = mode;
    z->api = api;
    if (api == API_VARN) {
        z->var = v;
        z->mt = s->vars[v].xtype == NC_CHAR ? MT_TEXT : MT_INT;
        return;
    }
    z->var = s->vars[v].ndims > 0 ? v : scen_zero_partner(s, v);
    if (z->var < 0) z->var = v; /* not generated; the call fails and says so */
    z->mt = s->vars[z->var].xtype == NC_CHAR ? MT_TEXT : MT_INT;
}

/* ---------------------------------------------------------------------------------------------- */
/* the writer                                                                                     */

static int put_op(int ncid, op_t *o) {
    const req_t *q = o->q;
    trace("put %s", o->label);
    int rc = q->flex == FX_NONE ? put_typed(ncid, o->varid, q->api, q->mode, q->mt, o, &o->reqid)
                                : put_flex(ncid, o->varid, q->api, q->mode, o, &o->reqid);
    o->posted_id = o->reqid;
    return rc;
}

static int get_op(int ncid, op_t *o) {
    const req_t *q = o->q;
    trace("get %s", o->label);
    int rc = q->flex == FX_NONE ? get_typed(ncid, o->varid, q->api, q->mode, q->mt, o, &o->reqid)
                                : get_flex(ncid, o->varid, q->api, q->mode, o, &o->reqid);
    o->posted_id = o->reqid;
    return rc;
}

/* Cancel a posted request: by its id (which must become NC_REQ_NULL), perhaps again with the saved
 * id (no such request any more: NC_EINVAL_REQUEST, the id left alone), or all pending requests of
 * the file (the request was posted first, so it is the only one). */
static void cancel_op(int ncid, op_t *o) {
    trace("cancel(%s) %s", cancel_name(o->q->cancel), o->label);
    if (o->rc != NC_NOERR) return; /* nothing was posted (the self-check reports the post) */
    if (o->q->cancel == CANCEL_ALL) {
        o->cancel_rc = ncmpi_cancel(ncid, NC_REQ_ALL, NULL, NULL);
        o->cancel_status = NC_NOERR;
    } else {
        o->cancel_status = -999;
        o->cancel_rc = ncmpi_cancel(ncid, 1, &o->reqid, &o->cancel_status);
        if (o->q->cancel_stale) {
            o->stale_req = o->posted_id;
            o->stale_status = -999;
            o->stale_rc = ncmpi_cancel(ncid, 1, &o->stale_req, &o->stale_status);
        }
    }
    o->cancel_req = o->reqid;
}

/* A request id after a call, relative to the one the post returned (the numbers differ between
 * PnetCDF and dtf). */
static const char *id_class(int id, int posted) { return id == NC_REQ_NULL ? "null" : id == posted ? "same" : "other"; }

/* Record (and check) the id a nonblocking post returned: PnetCDF gives a request that accesses no
 * element (zero counts, or only empty varn boxes) NC_REQ_NULL, any other a real id; a post that
 * fails NC_REQ_NULL too (so that a wait for a list of ids some of whose posts failed succeeds). */
static void rec_posted(sbuf_t *d, const op_t *o, int i, const char *what) {
    const req_t *q = o->q;
    if (q->mode != MODE_NB && q->mode != MODE_BPUT) return;
    const int want_null = o->L.n == 0 || o->rc != NC_NOERR, is_null = o->posted_id == NC_REQ_NULL;
    sb_printf(d, " posted=%s", is_null ? "null" : "id");
    if (is_null != want_null)
        fail("%s %d %s: the post returned request id %d, expected %s", what, i, o->label, o->posted_id,
             want_null ? (o->rc != NC_NOERR ? "NC_REQ_NULL (the post failed)" : "NC_REQ_NULL (no element)")
                       : "a real id");
}

/* Nonblocking posts PnetCDF 1.12.3 refuses, on variable v (one with a fixed dimension, d) of the
 * open file: each must fail with PnetCDF's code and set its request id to NC_REQ_NULL (a program may
 * then wait for a list of ids some of whose posts failed), and a wait_all for them all succeeds. The
 * writer's bput comes after its phases, with no buffer attached. */
static void failed_posts(int ncid, const scen_t *s, sbuf_t *d, int is_writer) {
    int v = -1, dim = -1;
    for (int i = 0; i < s->nvars && v < 0; i++)
        for (int k = s->vars[i].is_rec; k < s->vars[i].ndims && v < 0; k++) v = i, dim = k;
    if (v < 0) return;
    const var_t *V = &s->vars[v];
    MPI_Offset st[SC_MAXDIMS] = {0}, ct[SC_MAXDIMS], far[SC_MAXDIMS] = {0}, wide[SC_MAXDIMS];
    for (int k = 0; k < V->ndims; k++) ct[k] = wide[k] = 1;
    far[dim] = V->shape[dim] + 2;
    wide[dim] = V->shape[dim] + 1;
    double *buf = calloc((size_t)V->shape[dim] + 2, sizeof(double));
    const int is_text = V->xtype == NC_CHAR;
    enum { N = 8 };
    int rc[N], want[N], reqs[N], st_[N], n = 0;
    for (int i = 0; i < N; i++) reqs[i] = REQ_UNSET, st_[i] = -999;
#define POST(expected, call) (want[n] = (expected), rc[n] = (call), n++)
    if (is_text) {
        POST(NC_EINVALCOORDS, ncmpi_iget_vara_text(ncid, v, far, ct, (char *)buf, &reqs[n]));
        POST(NC_EEDGE, ncmpi_iget_vara_text(ncid, v, st, wide, (char *)buf, &reqs[n]));
        POST(NC_ECHAR, ncmpi_iget_vara_double(ncid, v, st, ct, buf, &reqs[n]));
    } else {
        POST(NC_EINVALCOORDS, ncmpi_iget_vara_double(ncid, v, far, ct, buf, &reqs[n]));
        POST(NC_EEDGE, ncmpi_iget_vara_double(ncid, v, st, wide, buf, &reqs[n]));
        POST(NC_ECHAR, ncmpi_iget_vara_text(ncid, v, st, ct, (char *)buf, &reqs[n]));
    }
    POST(NC_ENOTVAR, ncmpi_iget_var_double(ncid, 99, buf, &reqs[n]));
    POST(NC_ENULLSTART, is_text ? ncmpi_iget_varn_text(ncid, v, 1, NULL, NULL, (char *)buf, &reqs[n])
                                : ncmpi_iget_varn_double(ncid, v, 1, NULL, NULL, buf, &reqs[n]));
    POST(NC_EIOMISMATCH, ncmpi_iget_vara(ncid, v, st, ct, buf, 2, is_text ? MPI_CHAR : MPI_DOUBLE, &reqs[n]));
    if (is_writer) {
        POST(NC_ENULLABUF, is_text ? ncmpi_bput_vara_text(ncid, v, st, ct, (char *)buf, &reqs[n])
                                   : ncmpi_bput_vara_double(ncid, v, st, ct, buf, &reqs[n]));
    } else {
        POST(NC_EPERM, is_text ? ncmpi_iput_vara_text(ncid, v, st, ct, (char *)buf, &reqs[n])
                               : ncmpi_iput_vara_double(ncid, v, st, ct, buf, &reqs[n]));
    }
#undef POST
    for (int i = 0; i < n; i++) {
        sb_printf(d, "failed post %d rc=%d req=%s\n", i, rc[i], reqs[i] == NC_REQ_NULL ? "null" : "other");
        if (rc[i] != want[i]) fail("failed post %d on %s returned %d (%s), expected %d", i, V->name, rc[i],
                                   ncmpi_strerror(rc[i]), want[i]);
        if (reqs[i] != NC_REQ_NULL)
            fail("failed post %d on %s left its request id %d, expected NC_REQ_NULL (as PnetCDF)", i, V->name, reqs[i]);
    }
    rec_rc(d, ncmpi_wait_all(ncid, n, reqs, st_), NC_NOERR, "wait_all for the failed posts");
    for (int i = 0; i < n; i++)
        if (st_[i] != NC_NOERR) fail("failed post %d: wait_all status %d, expected NC_NOERR", i, st_[i]);
    if (is_writer) { /* the attached buffer's accounting: one element fits, a second does not */
        const MPI_Offset es = xtype_size(V->xtype);
        int id = REQ_UNSET, full = REQ_UNSET;
        MPI_Offset used = -1;
        rec_rc(d, ncmpi_buffer_attach(ncid, es), NC_NOERR, "buffer_attach(%lld)", (long long)es);
        rec_rc(d, is_text ? ncmpi_bput_vara_text(ncid, v, st, ct, (char *)buf, &id) :
                            ncmpi_bput_vara_double(ncid, v, st, ct, buf, &id), NC_NOERR, "bput of one element");
        rec_rc(d, is_text ? ncmpi_bput_vara_text(ncid, v, st, ct, (char *)buf, &full) :
                            ncmpi_bput_vara_double(ncid, v, st, ct, buf, &full), NC_EINSUFFBUF, "bput beyond the buffer");
        if (full != NC_REQ_NULL) fail("a bput beyond the buffer left its request id %d, expected NC_REQ_NULL", full);
        rec_rc(d, ncmpi_inq_buffer_usage(ncid, &used), NC_NOERR, "inq_buffer_usage");
        sb_printf(d, "buffer usage %lld\n", (long long)used);
        if (used != es) fail("buffer usage %lld with one element pending, expected %lld", (long long)used, (long long)es);
        rec_rc(d, ncmpi_buffer_detach(ncid), NC_EPENDINGBPUT, "buffer_detach with a bput pending");
        rec_rc(d, ncmpi_cancel(ncid, 1, &id, NULL), NC_NOERR, "cancel the bput"); /* (it writes nothing) */
        rec_rc(d, ncmpi_inq_buffer_usage(ncid, &used), NC_NOERR, "inq_buffer_usage");
        if (used != 0) fail("buffer usage %lld once the bput was cancelled, expected 0", (long long)used);
        rec_rc(d, ncmpi_buffer_detach(ncid), NC_NOERR, "buffer_detach");
    }
    free(buf);
}

/* Record (and check) what the cancel of a cancelled request did. */
static void rec_cancel(sbuf_t *d, const op_t *o, int i, const char *what) {
    const req_t *q = o->q;
    if (!q->cancel) return;
    const char *want_req = q->cancel == CANCEL_ALL ? "same" : "null";
    sb_printf(d, " cancel(%s) rc=%d status=%d req=%s", cancel_name(q->cancel), o->cancel_rc, o->cancel_status,
              id_class(o->cancel_req, o->posted_id));
    if (o->rc != NC_NOERR) return;
    if (o->cancel_rc != NC_NOERR || o->cancel_status != NC_NOERR)
        fail("%s %d %s: ncmpi_cancel returned %d (%s), status %d", what, i, o->label, o->cancel_rc, ncmpi_strerror(o->cancel_rc),
             o->cancel_status);
    if (strcmp(id_class(o->cancel_req, o->posted_id), want_req) != 0)
        fail("%s %d %s: request id after ncmpi_cancel is %s (%d), expected %s", what, i, o->label,
             id_class(o->cancel_req, o->posted_id), o->cancel_req, want_req);
    if (q->cancel_stale) {
        sb_printf(d, " stale-cancel rc=%d status=%d req=%s", o->stale_rc, o->stale_status, id_class(o->stale_req, o->posted_id));
        if (o->stale_rc != NC_EINVAL_REQUEST || o->stale_status != NC_EINVAL_REQUEST || o->stale_req != o->posted_id)
            fail("%s %d %s: cancelling the stale id again returned %d (%s), status %d, id %s; expected %d (NC_EINVAL_REQUEST), "
                 "that status, the id unchanged", what, i, o->label, o->stale_rc, ncmpi_strerror(o->stale_rc), o->stale_status,
                 id_class(o->stale_req, o->posted_id), NC_EINVAL_REQUEST);
    }
}

static void fill_put_buffer(const scen_t *s, op_t *o) {
    if (o->q->err || o->q->zero) return;
    int inject = 0;
    if (inject_kind == 1 && kase == inject_case) { /* the first put whose values the file keeps: */
        int first = 0, over = 0; /* the first LAYER_OVER one if there is one, else the first piece */
        for (int i = 0; i < s->nw; i++) over |= s->w[i].layer == LAYER_OVER;
        while (first < s->nw && (s->w[first].err || s->w[first].cancel || (s->w[first].layer == LAYER_OVER) != over))
            first++;
        inject = first < s->nw && &s->w[first] == o->q;
    }
    for (MPI_Offset k = 0; k < o->L.n; k++) {
        MPI_Offset idx = req_element_index(s, o->q, o->st, o->ct, o->sd, k);
        num_t x = req_put_value(s, o->q, idx);
        if (inject && k == 0) {
            x.i++, x.u++, x.d++;
            printf("INJECTED case=%d writer rank=%d: %s element 0 is off by one\n", kase, rank, o->label);
        }
        num_to_mem(x, o->L.mt, o->buf + o->L.off[k]);
    }
}

/* Put an attribute with its put_mt memory type (or the void * call in the external type). */
static int put_att(int ncid, int varid, const att_t *A) {
    unsigned char buf[SC_MAXATTLEN * 8];
    const char *name = A->name;
    nc_type x = A->xtype;
    MPI_Offset len = A->len;
    if (x == NC_CHAR) {
        char t[SC_MAXATTLEN];
        for (int j = 0; j < A->len; j++) t[j] = (char)A->vals[j].i;
        return ncmpi_put_att_text(ncid, varid, name, len, t);
    }
    int mt = A->put_mt < 0 ? xtype_natural_mt(x) : A->put_mt;
    for (int j = 0; j < A->len; j++) num_to_mem(A->vals[j], mt, buf + (size_t)j * (size_t)mt_size(mt));
    if (A->put_mt < 0) return ncmpi_put_att(ncid, varid, name, x, len, buf);
    const void *b = buf;
    switch (mt) {
    case MT_SCHAR: return ncmpi_put_att_schar(ncid, varid, name, x, len, b);
    case MT_UCHAR: return ncmpi_put_att_uchar(ncid, varid, name, x, len, b);
    case MT_SHORT: return ncmpi_put_att_short(ncid, varid, name, x, len, b);
    case MT_USHORT: return ncmpi_put_att_ushort(ncid, varid, name, x, len, b);
    case MT_INT: return ncmpi_put_att_int(ncid, varid, name, x, len, b);
    case MT_UINT: return ncmpi_put_att_uint(ncid, varid, name, x, len, b);
    case MT_LONG: return ncmpi_put_att_long(ncid, varid, name, x, len, b);
    case MT_FLOAT: return ncmpi_put_att_float(ncid, varid, name, x, len, b);
    case MT_DOUBLE: return ncmpi_put_att_double(ncid, varid, name, x, len, b);
    case MT_LONGLONG: return ncmpi_put_att_longlong(ncid, varid, name, x, len, b);
    default: return ncmpi_put_att_ulonglong(ncid, varid, name, x, len, b);
    }
}

/* Complete the nonblocking requests ops[0..n) (this rank's) with wait kind wk; statuses go into ops.
 * stale_wait: after a wait(list) in independent mode, wait again for the first (now completed) id. */
static void complete(int ncid, sbuf_t *d, op_t **ops, int n, int wk, const char *what, int stale_wait) {
    int *reqs = malloc(sizeof(int) * (size_t)(n + 1)), *st = malloc(sizeof(int) * (size_t)(n + 1));
    for (int i = 0; i < n; i++) reqs[i] = ops[i]->reqid, st[i] = -999;
    /* the wait returns the first error of the requests (a get whose data is out of range: NC_ERANGE) */
    int expect = NC_NOERR;
    for (int i = 0; i < n; i++)
        if (ops[i]->erange && expect == NC_NOERR) expect = NC_ERANGE;
    /* PnetCDF 1.12.3 misplaces the statuses of a wait in which an iget_varn's values are out of range
     * (NC_ERANGE on the list's first request, and on others that got none; its own may say NC_NOERR):
     * there the statuses are not compared between the runs, and not checked in file mode. dtf gives
     * each request its own status, checked in transfer mode. */
    int unsure = 0;
    for (int i = 0; i < n; i++) unsure |= n > 1 && ops[i]->q->api == API_VARN && ops[i]->erange;
    for (int i = 0; i < n; i++) ops[i]->status_unsure = unsure;
    switch (wk) {
    case WAIT_ALL_REQALL:
        rec_rc(d, ncmpi_wait_all(ncid, NC_REQ_ALL, NULL, NULL), expect, "%s wait_all(NC_REQ_ALL)", what);
        break;
    case WAIT_ALL_LIST:
        rec_rc(d, ncmpi_wait_all(ncid, n, reqs, st), expect, "%s wait_all(%d)", what, n);
        for (int i = 0; i < n; i++) ops[i]->status = st[i], ops[i]->has_status = 1, ops[i]->wait_req = reqs[i];
        break;
    default:
        rec_rc(d, ncmpi_begin_indep_data(ncid), NC_NOERR, "%s begin_indep_data", what);
        rec_rc(d, ncmpi_wait(ncid, n, reqs, st), expect, "%s wait(%d)", what, n);
        for (int i = 0; i < n; i++) ops[i]->status = st[i], ops[i]->has_status = 1, ops[i]->wait_req = reqs[i];
        int first = 0; /* the first request that got an id (a zero-length one gets NC_REQ_NULL) */
        while (first < n && ops[first]->posted_id == NC_REQ_NULL) first++;
        if (stale_wait && first < n) { /* nothing is pending now, so no id is valid */
            int posted = ops[first]->posted_id, id = posted, sst = -999;
            rec_rc(d, ncmpi_wait(ncid, 1, &id, &sst), NC_EINVAL_REQUEST, "%s wait(1) again for a completed id", what);
            sb_printf(d, "%s wait again status=%d req=%s\n", what, sst, id_class(id, posted));
            if (sst != NC_EINVAL_REQUEST || id != posted)
                fail("%s wait(1) again for the completed id %d: status %d, id %d; expected NC_EINVAL_REQUEST and the id unchanged",
                     what, posted, sst, id);
        }
        rec_rc(d, ncmpi_end_indep_data(ncid), NC_NOERR, "%s end_indep_data", what);
        break;
    }
    free(reqs);
    free(st);
}

/* Run the phases of a request list (writer puts or reader gets). ops[i] corresponds to reqs[i]. */
static void run_phases(int ncid, const scen_t *s, sbuf_t *d, const req_t *reqs, int nreq, op_t *ops,
                       const int *phases, int nphases, const int *forced, const int *waits, op_t **zeros, int *nzeros) {
    op_t **mine = malloc(sizeof(op_t *) * (size_t)(nreq + 1)), **waitlist = malloc(sizeof(op_t *) * (size_t)(nreq + 1));
    for (int ph = 0; ph < nphases; ph++) {
        int mode = phases[ph], nmine = 0, any = forced[mode];
        /* Writers: ROMIO's collective write fills holes by read-modify-write on the aggregator, which
         * may still be writing when the other ranks have returned from the collective call; a later
         * independent write of a neighbouring element by another rank is then overwritten with the
         * stale byte (the pieces never overlap, but their file extents interleave). A barrier between
         * the phases keeps the file-mode oracle deterministic (it is plain MPI: no effect on dtf). */
        if (is_writer) MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < nreq; i++)
            if (reqs[i].mode == mode) {
                any = 1;
                if (reqs[i].rank == rank) mine[nmine++] = &ops[i];
            }
        if (!any) continue;
        switch (mode) {
        case MODE_COLL: /* per variable and class (varn or not): round j = every rank's j-th request, or a zero-length one */
            for (int v = 0; v < s->nvars; v++) {
                for (int varn = 0; varn < 2; varn++) {
                    int rounds = 0, nv = 0;
                    for (int p = 0; p < (is_writer ? s->M : s->N); p++) {
                        int c = 0;
                        for (int i = 0; i < nreq; i++)
                            c += reqs[i].mode == mode && reqs[i].rank == p && reqs[i].var == v && (reqs[i].api == API_VARN) == varn;
                        if (c > rounds) rounds = c;
                    }
                    for (int j = 0; j < rounds; j++) {
                        op_t *o = NULL;
                        while (nv < nmine && !o) {
                            if (mine[nv]->q->var == v && (mine[nv]->q->api == API_VARN) == varn) o = mine[nv];
                            nv++;
                        }
                        if (!o) {
                            req_t *z = malloc(sizeof *z);
                            zero_req(s, z, MODE_COLL, v, varn ? API_VARN : API_VARA);
                            o = malloc(sizeof *o);
                            op_prepare(s, z, o);
                            zeros[(*nzeros)++] = o;
                        }
                        o->rc = is_writer ? put_op(ncid, o) : get_op(ncid, o);
                    }
                }
            }
            break;
        case MODE_INDEP:
            rec_rc(d, ncmpi_begin_indep_data(ncid), NC_NOERR, "indep begin_indep_data");
            for (int j = 0; j < nmine; j++) mine[j]->rc = is_writer ? put_op(ncid, mine[j]) : get_op(ncid, mine[j]);
            rec_rc(d, ncmpi_end_indep_data(ncid), NC_NOERR, "indep end_indep_data");
            break;
        case MODE_NB:
        case MODE_BPUT: {
            int attached = 0;
            if (mode == MODE_BPUT && nmine) {
                MPI_Offset bytes = 64;
                for (int j = 0; j < nmine; j++) bytes += mine[j]->L.n * 8;
                rec_rc(d, ncmpi_buffer_attach(ncid, bytes), NC_NOERR, "bput buffer_attach");
                attached = 1;
            }
            /* a request cancelled with NC_REQ_ALL is posted before the others, so it is the only one */
            for (int j = 0; j < nmine; j++)
                if (mine[j]->q->cancel == CANCEL_ALL) {
                    mine[j]->rc = is_writer ? put_op(ncid, mine[j]) : get_op(ncid, mine[j]);
                    cancel_op(ncid, mine[j]);
                }
            for (int j = 0; j < nmine; j++)
                if (mine[j]->q->cancel != CANCEL_ALL) {
                    mine[j]->rc = is_writer ? put_op(ncid, mine[j]) : get_op(ncid, mine[j]);
                    if (mine[j]->q->cancel == CANCEL_NOW) cancel_op(ncid, mine[j]);
                }
            for (int j = 0; j < nmine; j++)
                if (mine[j]->q->cancel == CANCEL_LAST) cancel_op(ncid, mine[j]);
            /* the wait: the live requests, and cancelled ones whose id (now NC_REQ_NULL) is passed too */
            int nwait = 0;
            for (int j = 0; j < nmine; j++)
                if (!mine[j]->q->cancel || mine[j]->q->cancel_inwait) waitlist[nwait++] = mine[j];
            complete(ncid, d, waitlist, nwait, waits[mode], mode == MODE_NB ? (is_writer ? "iput" : "iget") : "bput",
                     is_writer ? s->wstale_wait : s->rstale_wait);
            if (attached) rec_rc(d, ncmpi_buffer_detach(ncid), NC_NOERR, "bput buffer_detach");
            break;
        }
        }
    }
    free(mine);
    free(waitlist);
}

static void write_file(const char *path, const char *text, size_t n) {
    FILE *f = fopen(path, rep > 0 ? "a" : "w");
    if (!f || fwrite(text, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "%s rank %d: cannot write %s\n", role, rank, path);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

/* The file of the current case. */
static void case_path(char *path, size_t size, const char *dir) {
    if (repeat == 1) {
        snprintf(path, size, "%s/case.%04d.nc", dir, kase);
        return;
    }
    char letters[16];
    int n = 0;
    for (int k = kase;; k /= 26) {
        letters[n++] = (char)('a' + k % 26);
        if (k < 26) break;
    }
    letters[n] = 0;
    snprintf(path, size, "%s/case.%s.nc", dir, letters);
}

static void writer_case(const scen_t *s, const char *dir) {
    char path[4096], dpath[4096];
    case_path(path, sizeof path, dir);
    sbuf_t d = {0};
    sb_printf(&d, "case %d writer rank %d of %d\n", kase, rank, nranks);
    if (repeat > 1) sb_printf(&d, "repeat %d\n", rep);
    int ncid, rc, old;
    /* no ROMIO data sieving for independent writes: its read-modify-write of a whole extent loses
     * the concurrent independent writes of other ranks to elements inside that extent */
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "romio_ds_write", "disable");
    rc = rec_rc(&d, ncmpi_create(MPI_COMM_WORLD, path, NC_CLOBBER | NC_64BIT_DATA, info, &ncid), NC_NOERR, "create");
    MPI_Info_free(&info);
    if (rc == NC_NOERR) {
        if (s->setfill) {
            rc = ncmpi_set_fill(ncid, NC_FILL, &old);
            rec_rc(&d, rc, NC_NOERR, "set_fill(NC_FILL) old=%d", old);
        }
        int dimids[SC_MAXFDIMS], varids[SC_MAXVARS];
        for (int i = 0; i < s->ndims; i++)
            rec_rc(&d, ncmpi_def_dim(ncid, s->dims[i].name, s->dims[i].len, &dimids[i]), NC_NOERR, "def_dim %s", s->dims[i].name);
        for (int a = 0; a < s->ngatts; a++) rec_rc(&d, put_att(ncid, NC_GLOBAL, &s->gatts[a]), NC_NOERR, "put_att global %s", s->gatts[a].name);
        for (int v = 0; v < s->nvars; v++) {
            const var_t *V = &s->vars[v];
            int dims[SC_MAXDIMS];
            for (int i = 0; i < V->ndims; i++) dims[i] = dimids[V->dimids[i]];
            rec_rc(&d, ncmpi_def_var(ncid, V->name, V->xtype, V->ndims, dims, &varids[v]), NC_NOERR, "def_var %s", V->name);
            for (int a = 0; a < V->natts; a++)
                if (V->atts[a].is_fill != 2) rec_rc(&d, put_att(ncid, v, &V->atts[a]), NC_NOERR, "put_att %s %s", V->name, V->atts[a].name);
            if (V->dvf != DVF_NONE) {
                unsigned char fv[8];
                num_to_mem(V->fill, xtype_natural_mt(V->xtype), fv);
                rec_rc(&d, ncmpi_def_var_fill(ncid, v, V->dvf == DVF_NOFILL, V->dvf == DVF_FILL_CUSTOM ? fv : NULL),
                       NC_NOERR, "def_var_fill %s", V->name);
            }
        }
        rec_rc(&d, ncmpi_enddef(ncid), NC_NOERR, "enddef");
        for (int v = 0; v < s->nvars; v++)
            if (s->vars[v].fill_rec)
                for (MPI_Offset r = 0; r < s->nrec; r++)
                    rec_rc(&d, ncmpi_fill_var_rec(ncid, v, r), NC_NOERR, "fill_var_rec %s %lld", s->vars[v].name, (long long)r);

        op_t *ops = calloc((size_t)s->nw + 1, sizeof(op_t));
        op_t **zeros = calloc((size_t)s->nw * 4 + 8, sizeof(op_t *));
        int nzeros = 0;
        for (int i = 0; i < s->nw; i++)
            if (s->w[i].rank == rank) {
                op_prepare(s, &s->w[i], &ops[i]);
                fill_put_buffer(s, &ops[i]);
            }
        run_phases(ncid, s, &d, s->w, s->nw, ops, s->wphase, s->nwphase, s->wphase_forced, s->wwait, zeros, &nzeros);
        failed_posts(ncid, s, &d, 1);
        MPI_Barrier(MPI_COMM_WORLD);
        rec_rc(&d, use_dtf ? dtf_transfer(path, ncid) : NC_NOERR, NC_NOERR, "dtf_transfer");
        rec_rc(&d, ncmpi_close(ncid), NC_NOERR, "close");
        /* after the close: return codes, statuses, and that PnetCDF left the put buffers alone */
        for (int i = 0; i < s->nw; i++) {
            op_t *o = &ops[i];
            if (s->w[i].rank != rank) continue;
            int expect = err_code(o->q->err);
            sb_printf(&d, "put %d %s rc=%d", i, o->label, o->rc);
            rec_posted(&d, o, i, "put");
            if (o->has_status) sb_printf(&d, " status=%d req=%s", o->status, id_class(o->wait_req, o->posted_id));
            rec_cancel(&d, o, i, "put");
            sb_printf(&d, "\n");
            if (o->rc != expect) fail("put %d %s returned %d (%s), expected %d", i, o->label, o->rc, ncmpi_strerror(o->rc), expect);
            if (o->has_status && o->status != NC_NOERR) fail("put %d %s: status %d (%s)", i, o->label, o->status, ncmpi_strerror(o->status));
            if (o->has_status && o->wait_req != NC_REQ_NULL) fail("put %d %s: request id %d after the wait, expected NC_REQ_NULL", i, o->label, o->wait_req);
            unsigned char *e = op_expected(s, o, 0);
            if (!o->q->err && memcmp(e, o->mem, o->total) != 0) fail("put %d %s: the put buffer was modified", i, o->label);
            free(e);
            /* The buffer is the program's again: scribbled over, so that values dtf still took from it
             * after the close (buffer_data=0) would differ from the oracle's. */
            if (o->mem) memset(o->mem, 0x5A, o->total);
            op_release(o);
        }
        for (int i = 0; i < nzeros; i++) {
            sb_printf(&d, "zero %s rc=%d\n", zeros[i]->label, zeros[i]->rc);
            if (zeros[i]->rc != NC_NOERR) fail("zero-length %s returned %d (%s)", zeros[i]->label, zeros[i]->rc, ncmpi_strerror(zeros[i]->rc));
            free((void *)zeros[i]->q);
            op_release(zeros[i]);
            free(zeros[i]);
        }
        free(zeros);
        free(ops);
    }
    snprintf(dpath, sizeof dpath, "%s/wdump.%04d.%d", dir, kase, rank);
    write_file(dpath, d.s, d.n);
    free(d.s);
}

/* ---------------------------------------------------------------------------------------------- */
/* the reader                                                                                     */

static int get_att_typed(int ncid, int varid, const char *name, int mt, void *b) {
    switch (mt) {
    case MT_SCHAR: return ncmpi_get_att_schar(ncid, varid, name, b);
    case MT_UCHAR: return ncmpi_get_att_uchar(ncid, varid, name, b);
    case MT_SHORT: return ncmpi_get_att_short(ncid, varid, name, b);
    case MT_USHORT: return ncmpi_get_att_ushort(ncid, varid, name, b);
    case MT_INT: return ncmpi_get_att_int(ncid, varid, name, b);
    case MT_UINT: return ncmpi_get_att_uint(ncid, varid, name, b);
    case MT_LONG: return ncmpi_get_att_long(ncid, varid, name, b);
    case MT_FLOAT: return ncmpi_get_att_float(ncid, varid, name, b);
    case MT_DOUBLE: return ncmpi_get_att_double(ncid, varid, name, b);
    case MT_LONGLONG: return ncmpi_get_att_longlong(ncid, varid, name, b);
    case MT_ULONGLONG: return ncmpi_get_att_ulonglong(ncid, varid, name, b);
    default: return ncmpi_get_att_text(ncid, varid, name, b);
    }
}

/* Inquire and check the attributes of varid (NC_GLOBAL or a variable). */
static void check_atts(int ncid, const scen_t *s, sbuf_t *d, int v, const att_t *atts, int natts) {
    int varid = v < 0 ? NC_GLOBAL : v;
    for (int a = 0; a < natts; a++) {
        const att_t *A = &atts[a];
        char name[NC_MAX_NAME + 1] = "";
        nc_type xt = -1;
        MPI_Offset len = -1;
        int rc = ncmpi_inq_attname(ncid, varid, a, name);
        sb_printf(d, "att %d %d inq_attname rc=%d name=%s\n", v, a, rc, name);
        if (rc != NC_NOERR || strcmp(name, A->name) != 0)
            fail("var %d attribute %d: inq_attname rc=%d name '%s', expected '%s'", v, a, rc, name, A->name);
        rc = ncmpi_inq_att(ncid, varid, A->name, &xt, &len);
        sb_printf(d, "att %d %s inq_att rc=%d type=%d len=%lld\n", v, A->name, rc, (int)xt, (long long)len);
        if (rc != NC_NOERR || xt != A->xtype || len != A->len)
            fail("var %d attribute %s: inq_att rc=%d type %d len %lld, expected type %d len %d", v, A->name, rc, (int)xt,
                 (long long)len, A->xtype, A->len);
        /* raw, in the external type */
        unsigned char got[2 * SC_GUARD + SC_MAXATTLEN * 8], want[sizeof got];
        for (size_t i = 0; i < sizeof got; i++) got[i] = want[i] = sentinel_byte(i);
        rc = ncmpi_get_att(ncid, varid, A->name, got + SC_GUARD);
        int xs = xtype_size(A->xtype), nat = xtype_natural_mt(A->xtype);
        for (int j = 0; j < A->len; j++) num_to_mem(A->vals[j], nat, want + SC_GUARD + (size_t)j * (size_t)xs);
        sb_printf(d, "att %d %s get_att rc=%d data=", v, A->name, rc);
        sb_hex(d, got, sizeof got);
        sb_printf(d, "\n");
        if (rc != NC_NOERR || memcmp(got, want, sizeof got) != 0) fail("var %d attribute %s: get_att rc=%d, wrong bytes", v, A->name, rc);
        /* converted to another memory type */
        int mt = s->att_mt[v + 1][a];
        if (mt < 0) continue;
        int ms = mt_size(mt), expect = NC_NOERR;
        for (size_t i = 0; i < sizeof got; i++) got[i] = want[i] = sentinel_byte(i);
        rc = get_att_typed(ncid, varid, A->name, mt, got + SC_GUARD);
        for (int j = 0; j < A->len; j++)
            if (num_to_mem(A->vals[j], mt, want + SC_GUARD + (size_t)j * (size_t)ms) == NC_ERANGE) expect = NC_ERANGE;
        sb_printf(d, "att %d %s get_att_%s rc=%d data=", v, A->name, mt_name(mt), rc);
        sb_hex(d, got, sizeof got);
        sb_printf(d, "\n");
        if (rc != expect || memcmp(got, want, sizeof got) != 0)
            fail("var %d attribute %s: get_att_%s rc=%d (expected %d)%s", v, A->name, mt_name(mt), rc, expect,
                 memcmp(got, want, sizeof got) ? ", wrong bytes" : "");
    }
}

static void inquire(int ncid, const scen_t *s, sbuf_t *d) {
    int ndims = -1, nvars = -1, ngatts = -1, unlim = -2, fmt = -1, rc;
    rc = ncmpi_inq(ncid, &ndims, &nvars, &ngatts, &unlim);
    sb_printf(d, "inq rc=%d ndims=%d nvars=%d ngatts=%d unlimdim=%d\n", rc, ndims, nvars, ngatts, unlim);
    if (rc || ndims != s->ndims || nvars != s->nvars || ngatts != s->ngatts || unlim != s->recdim)
        fail("ncmpi_inq rc=%d ndims=%d nvars=%d ngatts=%d unlimdim=%d, expected %d %d %d %d", rc, ndims, nvars, ngatts,
             unlim, s->ndims, s->nvars, s->ngatts, s->recdim);
    rc = ncmpi_inq_format(ncid, &fmt);
    sb_printf(d, "inq_format rc=%d format=%d\n", rc, fmt);
    if (rc || fmt != NC_FORMAT_CDF5) fail("inq_format rc=%d format=%d, expected %d", rc, fmt, NC_FORMAT_CDF5);
    for (int i = 0; i < s->ndims; i++) {
        char name[NC_MAX_NAME + 1] = "";
        MPI_Offset len = -1, want = i == s->recdim ? s->nrec : s->dims[i].len;
        int id = -1;
        rc = ncmpi_inq_dim(ncid, i, name, &len);
        sb_printf(d, "inq_dim %d rc=%d name=%s len=%lld\n", i, rc, name, (long long)len);
        if (rc || strcmp(name, s->dims[i].name) || len != want)
            fail("inq_dim %d rc=%d name=%s len=%lld, expected %s %lld", i, rc, name, (long long)len, s->dims[i].name, (long long)want);
        rc = ncmpi_inq_dimid(ncid, s->dims[i].name, &id);
        sb_printf(d, "inq_dimid %s rc=%d id=%d\n", s->dims[i].name, rc, id);
        if (rc || id != i) fail("inq_dimid %s rc=%d id=%d", s->dims[i].name, rc, id);
    }
    if (s->recdim >= 0) {
        MPI_Offset len = -1;
        rc = ncmpi_inq_dimlen(ncid, s->recdim, &len);
        sb_printf(d, "inq_dimlen unlimited rc=%d len=%lld\n", rc, (long long)len);
        if (rc || len != s->nrec) fail("inq_dimlen(unlimited) rc=%d len=%lld, expected %lld", rc, (long long)len, (long long)s->nrec);
    }
    int id = -1;
    rc = ncmpi_inq_varid(ncid, "no_such_variable", &id);
    rec_rc(d, rc, NC_ENOTVAR, "inq_varid no_such_variable");
    check_atts(ncid, s, d, -1, s->gatts, s->ngatts);
    nc_type xt;
    MPI_Offset len;
    rec_rc(d, ncmpi_inq_att(ncid, NC_GLOBAL, "no_such_attribute", &xt, &len), NC_ENOTATT, "inq_att no_such_attribute");
    for (int v = 0; v < s->nvars; v++) {
        const var_t *V = &s->vars[v];
        char name[NC_MAX_NAME + 1] = "";
        int vnd = -1, dimids[64], natts = -1, vid = -1, bad = 0;
        nc_type vxt = -1;
        rc = ncmpi_inq_var(ncid, v, name, &vxt, &vnd, dimids, &natts);
        sb_printf(d, "inq_var %d rc=%d name=%s type=%d ndims=%d natts=%d dimids=", v, rc, name, (int)vxt, vnd, natts);
        for (int i = 0; i < vnd && i < 64; i++) sb_printf(d, "%s%d", i ? "," : "", dimids[i]);
        sb_printf(d, "\n");
        bad = rc || strcmp(name, V->name) || vxt != V->xtype || vnd != V->ndims || natts != V->natts;
        for (int i = 0; !bad && i < V->ndims; i++) bad = dimids[i] != V->dimids[i];
        if (bad) fail("inq_var %d rc=%d name=%s type=%d ndims=%d natts=%d, expected %s %d %d %d", v, rc, name, (int)vxt, vnd, natts,
                      V->name, V->xtype, V->ndims, V->natts);
        rc = ncmpi_inq_varid(ncid, V->name, &vid);
        sb_printf(d, "inq_varid %s rc=%d id=%d\n", V->name, rc, vid);
        if (rc || vid != v) fail("inq_varid %s rc=%d id=%d", V->name, rc, vid);
        int no_fill = -1;
        unsigned char fv[8], want[8];
        memset(fv, 0xEE, sizeof fv);
        memset(want, 0xEE, sizeof want);
        rc = ncmpi_inq_var_fill(ncid, v, &no_fill, fv);
        num_to_mem(V->fill, xtype_natural_mt(V->xtype), want);
        sb_printf(d, "inq_var_fill %d rc=%d no_fill=%d value=", v, rc, no_fill);
        sb_hex(d, fv, sizeof fv);
        sb_printf(d, "\n");
        if (rc || memcmp(fv, want, sizeof fv) != 0) fail("inq_var_fill %s rc=%d: wrong fill value", V->name, rc);
        check_atts(ncid, s, d, v, V->atts, V->natts);
    }
}

static void reader_case(const scen_t *s, const char *dir) {
    char path[4096], dpath[4096];
    case_path(path, sizeof path, dir);
    sbuf_t d = {0};
    sb_printf(&d, "case %d reader rank %d of %d\n", kase, rank, nranks);
    if (repeat > 1) sb_printf(&d, "repeat %d\n", rep);
    int ncid;
    int rc = rec_rc(&d, ncmpi_open(MPI_COMM_WORLD, path, NC_NOWRITE, MPI_INFO_NULL, &ncid), NC_NOERR, "open");
    if (rc == NC_NOERR) {
        inquire(ncid, s, &d);
        op_t *ops = calloc((size_t)s->nr + 1, sizeof(op_t));
        op_t **zeros = calloc((size_t)s->nr * 4 + 8, sizeof(op_t *));
        int nzeros = 0;
        for (int i = 0; i < s->nr; i++)
            if (s->r[i].rank == rank) {
                op_prepare(s, &s->r[i], &ops[i]);
                ops[i].expect = op_expected(s, &ops[i], 1);
            }
        int waits[MODE_COUNT] = {0, 0, s->rwait, 0};
        run_phases(ncid, s, &d, s->r, s->nr, ops, s->rphase, s->nrphase, s->rphase_forced, waits, zeros, &nzeros);
        failed_posts(ncid, s, &d, 0);
        rec_rc(&d, use_dtf ? dtf_transfer(path, ncid) : NC_NOERR, NC_NOERR, "dtf_transfer");
        rec_rc(&d, ncmpi_close(ncid), NC_NOERR, "close");
        if (inject_kind == 2 && kase == inject_case)
            for (int i = 0; i < s->nr; i++)
                if (s->r[i].rank == rank) {
                    ops[i].mem[0] ^= 0xff;
                    printf("INJECTED case=%d reader rank=%d: guard byte of get %d changed\n", kase, rank, i);
                    break;
                }
        /* after the close: everything the gets delivered */
        for (int i = 0; i < s->nr; i++) {
            op_t *o = &ops[i];
            if (s->r[i].rank != rank) continue;
            unsigned char *e = o->expect;
            int expect_rc = err_code(o->q->err), expect_status = NC_NOERR;
            if (!o->q->err && o->erange) {
                if (o->q->mode == MODE_NB) expect_status = NC_ERANGE;
                else expect_rc = NC_ERANGE;
            }
            sb_printf(&d, "get %d %s rc=%d", i, o->label, o->rc);
            rec_posted(&d, o, i, "get");
            if (o->has_status && o->status_unsure) sb_printf(&d, " status=? req=%s", id_class(o->wait_req, o->posted_id));
            else if (o->has_status) sb_printf(&d, " status=%d req=%s", o->status, id_class(o->wait_req, o->posted_id));
            rec_cancel(&d, o, i, "get");
            if (o->has_status && o->wait_req != NC_REQ_NULL) fail("get %d %s: request id %d after the wait, expected NC_REQ_NULL", i, o->label, o->wait_req);
            sb_printf(&d, " data=");
            sb_hex(&d, o->mem, o->total);
            sb_printf(&d, "\n");
            if (o->rc != expect_rc) fail("get %d %s returned %d (%s), expected %d (%s)", i, o->label, o->rc, ncmpi_strerror(o->rc),
                                         expect_rc, ncmpi_strerror(expect_rc));
            if (o->has_status && o->status != expect_status && !(o->status_unsure && file_mode))
                fail("get %d %s: status %d (%s), expected %d", i, o->label, o->status, ncmpi_strerror(o->status), expect_status);
            if (memcmp(e, o->mem, o->total) != 0) {
                size_t b = 0;
                while (e[b] == o->mem[b]) b++;
                long long k = -1;
                for (MPI_Offset j = 0; j < o->L.n; j++)
                    if (b >= SC_GUARD + o->L.off[j] && b < SC_GUARD + o->L.off[j] + (size_t)o->L.elsize) k = (long long)j;
                char ex[64] = "", ob[64] = "";
                for (int j = 0; j < 8 && b + (size_t)j < o->total; j++) {
                    snprintf(ex + 2 * j, 3, "%02x", e[b + (size_t)j]);
                    snprintf(ob + 2 * j, 3, "%02x", o->mem[b + (size_t)j]);
                }
                if (o->q->cancel) {
                    fail("get %d %s: the cancelled get changed its buffer at byte %lld: got %s expected (untouched) %s", i, o->label,
                         (long long)b - SC_GUARD, ob, ex);
                } else if (k >= 0) {
                    MPI_Offset idx = req_element_index(s, o->q, o->st, o->ct, o->sd, k);
                    fail("get %d %s: wrong data at buffer byte %zu = element %lld of the request (variable index %lld, %s): "
                         "got %s expected %s", i, o->label, b - SC_GUARD, k, (long long)idx,
                         s->vars[o->q->var].written[idx] ? "written" : "never written", ob, ex);
                } else if (b < SC_GUARD) {
                    fail("get %d %s: guard byte %zu before the buffer changed: got %s expected %s", i, o->label, SC_GUARD - b, ob, ex);
                } else {
                    fail("get %d %s: buffer byte %zu (outside the elements: padding or guard) changed: got %s expected %s", i,
                         o->label, b - SC_GUARD, ob, ex);
                }
            }
            op_release(o);
        }
        for (int i = 0; i < nzeros; i++) {
            sb_printf(&d, "zero %s rc=%d\n", zeros[i]->label, zeros[i]->rc);
            if (zeros[i]->rc != NC_NOERR) fail("zero-length %s returned %d (%s)", zeros[i]->label, zeros[i]->rc, ncmpi_strerror(zeros[i]->rc));
            free((void *)zeros[i]->q);
            op_release(zeros[i]);
            free(zeros[i]);
        }
        free(zeros);
        free(ops);
    }
    snprintf(dpath, sizeof dpath, "%s/%s.%04d.%d", dir, strcmp(role, "reader2") == 0 ? "dump2" : "dump", kase, rank);
    write_file(dpath, d.s, d.n);
    free(d.s);
}

/* ---------------------------------------------------------------------------------------------- */

static int parse_seed(const char *a, unsigned long long *seed) {
    if (strcmp(a, "fixed") == 0) return 1;
    *seed = strtoull(a, NULL, 0);
    return 0;
}

/* Feature coverage of cases [0, ncases): how often each generator option occurs. */
static void stats(unsigned long long seed, int fixed, int ncases, int M, int N) {
    long api[2][API_COUNT] = {{0}}, mode[2][MODE_COUNT] = {{0}}, flex[2][FX_COUNT] = {{0}}, mt[2][MT_COUNT] = {{0}};
    long err[2][ERR_COUNT] = {{0}}, xt[16] = {0}, nd[5] = {0}, rec = 0, vars = 0, unwritten = 0, fillrec = 0;
    long dvf[4] = {0}, fillattr = 0, setfill = 0, gatts = 0, vatts = 0, padded_varm = 0, zero_reads = 0, conv = 0, req = 0;
    long varn_mode[2][MODE_COUNT] = {{0}}, varn_flex[2] = {0}, varn_null[2] = {0}, varn_boxes[2] = {0}, varn_zerobox[2] = {0};
    long varn_err[2] = {0}, varn_multi[2] = {0}, cancel[2][CANCEL_COUNT] = {{0}}, cancel_mode[2][MODE_COUNT] = {{0}};
    long cancel_api[2][API_COUNT] = {{0}}, cancel_stale[2] = {0}, cancel_inwait[2] = {0}, cancel_beyond = 0, cancel_fill = 0;
    long layers[3] = {0}, layer_other_rank = 0;
    for (int k = 0; k < ncases; k++) {
        scen_t *s = scen_make(seed, k, M, N, fixed);
        setfill += s->setfill;
        gatts += s->ngatts;
        for (int v = 0; v < s->nvars; v++) {
            const var_t *V = &s->vars[v];
            vars++;
            xt[V->xtype]++;
            nd[V->ndims]++;
            rec += V->is_rec;
            dvf[V->dvf]++;
            fillrec += V->fill_rec;
            vatts += V->natts;
            for (int a = 0; a < V->natts; a++) fillattr += V->atts[a].is_fill == 1;
            MPI_Offset w = 0;
            for (MPI_Offset e = 0; e < V->nelems; e++) w += V->written[e] != 0;
            unwritten += w < V->nelems;
        }
        for (int side = 0; side < 2; side++) {
            const req_t *r = side ? s->r : s->w;
            int n = side ? s->nr : s->nw;
            for (int i = 0; i < n; i++) {
                const req_t *q = &r[i];
                api[side][q->api]++, mode[side][q->mode]++, flex[side][q->flex]++, mt[side][q->mt]++, err[side][q->err]++;
                req++;
                if (!side) layers[q->layer]++;
                if (!side && q->layer) /* (by another rank than the piece it lies over: the one of the same var, region, api) */
                    for (int j = 0; j < n; j++)
                        if (!r[j].layer && r[j].var == q->var && r[j].api == q->api && r[j].box0 == q->box0 &&
                            !memcmp(r[j].start, q->start, sizeof q->start) && !memcmp(r[j].count, q->count, sizeof q->count)) {
                            layer_other_rank += r[j].rank != q->rank;
                            break;
                        }
                if (q->flex != FX_NULL && q->mt != xtype_natural_mt(s->vars[q->var].xtype)) conv++;
                if (q->api == API_VARM) {
                    MPI_Offset st[SC_MAXDIMS], ct[SC_MAXDIMS], sd[SC_MAXDIMS], m = 1;
                    req_region(s, q, st, ct, sd);
                    for (int d = 0; d < s->vars[q->var].ndims; d++) m *= ct[d];
                    layout_t L;
                    layout_make(s, q, &L);
                    padded_varm += L.bufcount_elems > m;
                    layout_free(&L);
                }
                if (side && q->api != API_VAR && q->api != API_VAR1 && q->api != API_VARN)
                    for (int d = 0; d < s->vars[q->var].ndims; d++)
                        if (q->count[d] == 0) { zero_reads++; break; }
                if (q->api == API_VARN) {
                    varn_mode[side][q->mode]++;
                    varn_flex[side] += q->flex != FX_NONE;
                    varn_null[side] += q->nullcounts;
                    varn_boxes[side] += q->nbox;
                    varn_err[side] += q->err != ERR_NONE;
                    varn_multi[side] += q->nbox > 1;
                    for (int b = 0; b < q->nbox; b++)
                        for (int d = 0; d < s->vars[q->var].ndims; d++)
                            if (s->boxes[q->box0 + b].count[d] == 0) { varn_zerobox[side]++; break; }
                }
                if (q->cancel) {
                    const var_t *V = &s->vars[q->var];
                    cancel[side][q->cancel]++;
                    cancel_mode[side][q->mode]++;
                    cancel_api[side][q->api]++;
                    cancel_stale[side] += q->cancel_stale;
                    cancel_inwait[side] += q->cancel_inwait;
                    if (!side) { /* onto never-written elements, or beyond the records (a zero-length box does not count) */
                        int beyond = V->is_rec && q->api != API_VARN && q->start[0] >= s->nrec;
                        for (int b = 0; V->is_rec && q->api == API_VARN && b < q->nbox; b++) {
                            const box_t *B = &s->boxes[q->box0 + b];
                            int empty = 0;
                            for (int d = 0; d < V->ndims && !q->nullcounts; d++) empty |= B->count[d] == 0;
                            beyond |= !empty && B->start[0] >= s->nrec;
                        }
                        cancel_beyond += beyond;
                        cancel_fill += !beyond;
                    }
                }
            }
        }
        scen_free(s);
    }
    printf("%d cases (seed %llu, %dx%d): %ld variables, %ld requests (%ld with a memory type other than the external one)\n",
           ncases, seed, M, N, vars, req, conv);
    printf("  external types:");
    for (int x = 1; x < 16; x++) if (xt[x]) printf(" %s %ld", xtype_name(x), xt[x]);
    printf("\n  dimensions: 0-D %ld, 1-D %ld, 2-D %ld, 3-D %ld, 4-D %ld; record variables %ld\n", nd[0], nd[1], nd[2], nd[3], nd[4], rec);
    printf("  fill: set_fill(NC_FILL) in %ld files; def_var_fill(0,NULL) %ld, (0,&v) %ld, (1,NULL) %ld; _FillValue put_att %ld; "
           "variables with never-written elements %ld; fill_var_rec %ld\n", setfill, dvf[1], dvf[2], dvf[3], fillattr, unwritten, fillrec);
    printf("  attributes: %ld global, %ld per variable\n", gatts, vatts);
    printf("  layered writes: %ld under a piece (overwritten by it), %ld over one (its values win); %ld by another rank\n",
           layers[LAYER_UNDER], layers[LAYER_OVER], layer_other_rank);
    for (int side = 0; side < 2; side++) {
        printf("  %s:", side ? "reader gets" : "writer puts");
        for (int a = 0; a < API_COUNT; a++) printf(" %s %ld", api_name(a), api[side][a]);
        printf(" |");
        for (int m = 0; m < (side ? MODE_BPUT : MODE_COUNT); m++) printf(" %s %ld", mode_name(m), mode[side][m]);
        printf(" |");
        for (int f = 0; f < FX_COUNT; f++) printf(" %s %ld", flex_name(f), flex[side][f]);
        printf("\n    memory types:");
        for (int m = 0; m < MT_COUNT; m++) printf(" %s %ld", mt_name(m), mt[side][m]);
        printf(" | deliberate errors:");
        for (int e = 1; e < ERR_COUNT; e++) printf(" %s %ld", err_name(e), err[side][e]);
        printf("\n");
    }
    printf("  varm with a padded (non-bijective) imap: %ld; reads with a zero count: %ld\n", padded_varm, zero_reads);
    for (int side = 0; side < 2; side++) {
        printf("  %s varn:", side ? "reader" : "writer");
        for (int m = 0; m < (side ? MODE_BPUT : MODE_COUNT); m++) printf(" %s %ld", mode_name(m), varn_mode[side][m]);
        printf(" | flexible %ld, counts=NULL %ld, several boxes %ld, boxes %ld, zero-length boxes %ld, deliberate errors %ld\n",
               varn_flex[side], varn_null[side], varn_multi[side], varn_boxes[side], varn_zerobox[side], varn_err[side]);
        printf("  %s cancelled:", side ? "reader" : "writer");
        for (int c = CANCEL_NOW; c < CANCEL_COUNT; c++) printf(" %s %ld", cancel_name(c), cancel[side][c]);
        printf(" |");
        for (int m = MODE_NB; m < (side ? MODE_BPUT : MODE_COUNT); m++) printf(" %s %ld", mode_name(m), cancel_mode[side][m]);
        printf(" |");
        for (int a = 0; a < API_COUNT; a++) printf(" %s %ld", api_name(a), cancel_api[side][a]);
        printf(" | stale id cancelled again %ld, NC_REQ_NULL id in the wait %ld", cancel_stale[side], cancel_inwait[side]);
        if (!side) printf(" | onto never-written elements %ld, beyond the records %ld", cancel_fill, cancel_beyond);
        printf("\n");
    }
}

int main(int argc, char **argv) {
    if (argc == 6 && strcmp(argv[1], "stats") == 0) {
        unsigned long long seed = 0;
        int fixed = parse_seed(argv[2], &seed);
        stats(seed, fixed, atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
        return 0;
    }
    if (argc == 6 && strcmp(argv[1], "describe") == 0) {
        unsigned long long seed = 0;
        int fixed = parse_seed(argv[2], &seed);
        scen_t *s = scen_make(seed, atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), fixed);
        scen_print(s, stdout);
        scen_free(s);
        return 0;
    }
    int provided; /* MPI_THREAD_MULTIPLE: dtf runs its progress thread (unless DTF_PROGRESS_THREAD=0) */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (argc != 9 || (strcmp(argv[1], "writer") && strcmp(argv[1], "reader") && strcmp(argv[1], "reader2"))) {
        if (rank == 0)
            fprintf(stderr, "usage: xfer_prop writer|reader|reader2 CONFIG DIR SEED|fixed FIRST NCASES M N\n"
                            "       xfer_prop describe SEED|fixed CASE M N\n");
        MPI_Finalize();
        return 2;
    }
    role = argv[1];
    trace_calls = getenv("XFER_TRACE") && atoi(getenv("XFER_TRACE"));
    if (getenv("XFER_REPEAT")) repeat = atoi(getenv("XFER_REPEAT"));
    if (repeat < 1) repeat = 1;
    const char *inj = getenv("XFER_INJECT");
    if (inj && *inj) {
        inject_kind = strncmp(inj, "value:", 6) == 0 ? 1 : strncmp(inj, "padding:", 8) == 0 ? 2 : 0;
        inject_case = inject_kind ? atoi(strchr(inj, ':') + 1) : -1;
        if (!inject_kind && rank == 0) fprintf(stderr, "%s: XFER_INJECT=%s not understood (value:K or padding:K)\n", role, inj);
    }
    is_writer = strcmp(role, "writer") == 0;
    const char *config = argv[2], *dir = argv[3];
    unsigned long long seed = 0;
    int fixed = parse_seed(argv[4], &seed);
    int first = atoi(argv[5]), ncases = atoi(argv[6]), M = atoi(argv[7]), N = atoi(argv[8]);
    if ((is_writer ? M : N) != nranks) {
        if (rank == 0) fprintf(stderr, "%s: started with %d ranks but told %s=%d\n", role, nranks, is_writer ? "M" : "N", is_writer ? M : N);
        MPI_Finalize();
        return 2;
    }
    use_dtf = strcmp(config, "-") != 0; /* "-": plain PnetCDF (run the writer first, then the reader) */
    file_mode = !use_dtf || (getenv("XFER_FILE_MODE") && !strcmp(getenv("XFER_FILE_MODE"), "1"));
    int err = use_dtf ? dtf_init(config, role) : DTF_SUCCESS;
    if (err != DTF_SUCCESS) {
        fprintf(stderr, "%s rank %d: dtf_init failed: %s: %s\n", role, rank, dtf_strerror(err), dtf_errmsg());
        MPI_Finalize();
        return 2;
    }
    double t0 = MPI_Wtime();
    long failed_cases = 0;
    for (kase = first; kase < first + ncases; kase++) {
        scen_t *s = scen_make(seed, kase, M, N, fixed);
        case_fails = 0;
        for (rep = 0; rep < repeat; rep++) {
            if (is_writer) writer_case(s, dir);
            else reader_case(s, dir);
        }
        rep = 0;
        if (case_fails) failed_cases++;
        scen_free(s);
    }
    double t1 = MPI_Wtime();
    if (use_dtf && (err = dtf_finalize()) != DTF_SUCCESS) {
        fprintf(stderr, "%s rank %d: dtf_finalize failed: %s\n", role, rank, dtf_errmsg());
        nfail++;
    }
    long tot[2] = {nfail, failed_cases}, all[2];
    MPI_Allreduce(tot, all, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("xfer_prop %s: %d ranks, %d cases, %.2f s, %s (%ld failed checks)\n", role, nranks, ncases, t1 - t0,
               all[0] ? "SELF-CHECK FAILED" : "self-check ok", all[0]);
        fflush(stdout);
    }
    MPI_Finalize();
    return all[0] ? 1 : 0;
}

/* Deterministic scenario generator of the transfer-mode property test; see scenario.h. */
#include "scenario.h"

#include <float.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------- */
/* random numbers: splitmix64, one stream per (seed, case, purpose, parameter)                    */

typedef struct {
    uint64_t s;
} rng_t;

static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static void rng_init(rng_t *r, uint64_t seed, uint64_t kase, uint64_t stream, uint64_t param) {
    r->s = mix64(mix64(mix64(seed + 0x9E3779B97F4A7C15ULL) ^ (kase * 0xD1B54A32D192ED03ULL)) ^
                 (stream << 32) ^ param);
}

static uint64_t rng_next(rng_t *r) { return mix64(r->s += 0x9E3779B97F4A7C15ULL); }

static int rnd(rng_t *r, int lo, int hi) { /* inclusive */
    if (hi <= lo) return lo;
    return lo + (int)(rng_next(r) % (uint64_t)(hi - lo + 1));
}

static int chance(rng_t *r, int percent) { return rnd(r, 0, 99) < percent; }

static void shuffle(rng_t *r, int *a, int n) {
    for (int i = n - 1; i > 0; i--) {
        int j = rnd(r, 0, i), t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

/* ---------------------------------------------------------------------------------------------- */
/* types                                                                                          */

static const int XTYPES[] = {NC_BYTE,  NC_CHAR,  NC_SHORT,  NC_INT,   NC_FLOAT, NC_DOUBLE,
                             NC_UBYTE, NC_USHORT, NC_UINT,  NC_INT64, NC_UINT64};
#define NXTYPES ((int)(sizeof XTYPES / sizeof XTYPES[0]))

int xtype_size(int x) {
    switch (x) {
    case NC_BYTE: case NC_CHAR: case NC_UBYTE: return 1;
    case NC_SHORT: case NC_USHORT: return 2;
    case NC_INT: case NC_UINT: case NC_FLOAT: return 4;
    default: return 8;
    }
}

int xtype_natural_mt(int x) {
    switch (x) {
    case NC_BYTE: return MT_SCHAR;
    case NC_CHAR: return MT_TEXT;
    case NC_SHORT: return MT_SHORT;
    case NC_INT: return MT_INT;
    case NC_FLOAT: return MT_FLOAT;
    case NC_DOUBLE: return MT_DOUBLE;
    case NC_UBYTE: return MT_UCHAR;
    case NC_USHORT: return MT_USHORT;
    case NC_UINT: return MT_UINT;
    case NC_INT64: return MT_LONGLONG;
    default: return MT_ULONGLONG;
    }
}

const char *xtype_name(int x) {
    switch (x) {
    case NC_BYTE: return "byte";
    case NC_CHAR: return "char";
    case NC_SHORT: return "short";
    case NC_INT: return "int";
    case NC_FLOAT: return "float";
    case NC_DOUBLE: return "double";
    case NC_UBYTE: return "ubyte";
    case NC_USHORT: return "ushort";
    case NC_UINT: return "uint";
    case NC_INT64: return "int64";
    case NC_UINT64: return "uint64";
    default: return "?";
    }
}

static const char *MT_NAMES[MT_COUNT] = {"text",  "schar", "uchar",  "short",    "ushort",   "int",
                                         "uint",  "long",  "float",  "double",   "longlong", "ulonglong"};
static const int MT_SIZES[MT_COUNT] = {1, 1, 1, sizeof(short), sizeof(unsigned short), sizeof(int),
                                       sizeof(unsigned), sizeof(long), sizeof(float), sizeof(double),
                                       sizeof(long long), sizeof(unsigned long long)};

int mt_size(int mt) { return MT_SIZES[mt]; }
const char *mt_name(int mt) { return mt >= 0 && mt < MT_COUNT ? MT_NAMES[mt] : "void"; }

const char *api_name(int a) {
    static const char *n[] = {"var", "var1", "vara", "vars", "varm", "varn"};
    return n[a];
}
const char *mode_name(int m) {
    static const char *n[] = {"coll", "indep", "nb", "bput"};
    return n[m];
}
const char *flex_name(int f) {
    static const char *n[] = {"typed", "basic", "count-1", "dtnull", "subarray", "vector", "contig", "resized", "indexed"};
    return n[f];
}
const char *err_name(int e) {
    static const char *n[] = {"none", "EINVALCOORDS", "EEDGE", "ECHAR", "ENOTVAR"};
    return n[e];
}
const char *cancel_name(int c) {
    static const char *n[] = {"none", "now", "last", "all"};
    return n[c];
}
int err_code(int e) {
    switch (e) {
    case ERR_COORDS: return NC_EINVALCOORDS;
    case ERR_EDGE: return NC_EEDGE;
    case ERR_CHAR: return NC_ECHAR;
    case ERR_NOTVAR: return NC_ENOTVAR;
    default: return NC_NOERR;
    }
}

static num_t num_i(long long i) { num_t n = {0, i, 0, 0}; return n; }
static num_t num_u(unsigned long long u) { num_t n = {1, 0, u, 0}; return n; }
static num_t num_f(double d) { num_t n = {2, 0, 0, (double)(float)d}; return n; }
static num_t num_d(double d) { num_t n = {3, 0, 0, d}; return n; }

static int xtype_unsigned(int x) { return x == NC_UBYTE || x == NC_USHORT || x == NC_UINT || x == NC_UINT64; }

/* A small integer v as held in a variable/attribute of external type x. */
static num_t num_of(int x, long long v) {
    if (x == NC_FLOAT) return num_f((double)v);
    if (x == NC_DOUBLE) return num_d((double)v);
    if (xtype_unsigned(x)) return num_u((unsigned long long)v);
    return num_i(v);
}

num_t num_default_fill(int x) {
    switch (x) {
    case NC_BYTE: return num_i(NC_FILL_BYTE);
    case NC_CHAR: return num_i(NC_FILL_CHAR);
    case NC_SHORT: return num_i(NC_FILL_SHORT);
    case NC_INT: return num_i(NC_FILL_INT);
    case NC_FLOAT: return num_f(NC_FILL_FLOAT);
    case NC_DOUBLE: return num_d(NC_FILL_DOUBLE);
    case NC_UBYTE: return num_u(NC_FILL_UBYTE);
    case NC_USHORT: return num_u(NC_FILL_USHORT);
    case NC_UINT: return num_u(NC_FILL_UINT);
    case NC_INT64: return num_i(NC_FILL_INT64);
    default: return num_u(NC_FILL_UINT64);
    }
}

/* Integer range of an integer memory type. */
static void mt_range(int mt, long double *lo, long double *hi) {
    switch (mt) {
    case MT_SCHAR: *lo = SCHAR_MIN; *hi = SCHAR_MAX; break;
    case MT_UCHAR: *lo = 0; *hi = UCHAR_MAX; break;
    case MT_SHORT: *lo = SHRT_MIN; *hi = SHRT_MAX; break;
    case MT_USHORT: *lo = 0; *hi = USHRT_MAX; break;
    case MT_INT: *lo = INT_MIN; *hi = INT_MAX; break;
    case MT_UINT: *lo = 0; *hi = UINT_MAX; break;
    case MT_LONG: *lo = LONG_MIN; *hi = LONG_MAX; break;
    case MT_LONGLONG: *lo = LLONG_MIN; *hi = LLONG_MAX; break;
    default: *lo = 0; *hi = ULLONG_MAX; break;
    }
}

static void store_fill(int mt, void *out) {
    switch (mt) {
    case MT_SCHAR: *(signed char *)out = NC_FILL_BYTE; break;
    case MT_UCHAR: *(unsigned char *)out = NC_FILL_UBYTE; break;
    case MT_SHORT: *(short *)out = NC_FILL_SHORT; break;
    case MT_USHORT: *(unsigned short *)out = NC_FILL_USHORT; break;
    case MT_INT: *(int *)out = NC_FILL_INT; break;
    case MT_UINT: *(unsigned *)out = NC_FILL_UINT; break;
    case MT_LONG: *(long *)out = NC_FILL_INT; break; /* sic: PnetCDF 1.12 uses NC_FILL_INT for long */
    case MT_FLOAT: *(float *)out = NC_FILL_FLOAT; break;
    case MT_DOUBLE: *(double *)out = NC_FILL_DOUBLE; break;
    case MT_LONGLONG: *(long long *)out = NC_FILL_INT64; break;
    case MT_ULONGLONG: *(unsigned long long *)out = NC_FILL_UINT64; break;
    default: *(char *)out = NC_FILL_CHAR; break;
    }
}

int num_to_mem(num_t x, int mt, void *out) {
    if (mt == MT_TEXT) {
        *(char *)out = (char)x.i;
        return NC_NOERR;
    }
    if (mt == MT_FLOAT || mt == MT_DOUBLE) {
        double d = x.kind == 0 ? (double)x.i : x.kind == 1 ? (double)x.u : x.d;
        if (mt == MT_DOUBLE) {
            *(double *)out = d;
        } else if (x.kind == 3 && (d > FLT_MAX || d < -FLT_MAX)) {
            store_fill(mt, out);
            return NC_ERANGE;
        } else {
            *(float *)out = x.kind == 0 ? (float)x.i : x.kind == 1 ? (float)x.u : (float)d;
        }
        return NC_NOERR;
    }
    long double lo, hi;
    mt_range(mt, &lo, &hi);
    long double v = x.kind == 0 ? (long double)x.i : x.kind == 1 ? (long double)x.u : (long double)x.d;
    if (v < lo || v > hi) {
        store_fill(mt, out);
        return NC_ERANGE;
    }
    long long si = x.kind == 0 ? x.i : x.kind == 1 ? (long long)x.u : (long long)x.d;
    unsigned long long ui = x.kind == 0 ? (unsigned long long)x.i : x.kind == 1 ? x.u : (unsigned long long)x.d;
    switch (mt) {
    case MT_SCHAR: *(signed char *)out = (signed char)si; break;
    case MT_UCHAR: *(unsigned char *)out = (unsigned char)ui; break;
    case MT_SHORT: *(short *)out = (short)si; break;
    case MT_USHORT: *(unsigned short *)out = (unsigned short)ui; break;
    case MT_INT: *(int *)out = (int)si; break;
    case MT_UINT: *(unsigned *)out = (unsigned)ui; break;
    case MT_LONG: *(long *)out = (long)si; break;
    case MT_LONGLONG: *(long long *)out = si; break;
    default: *(unsigned long long *)out = ui; break;
    }
    return NC_NOERR;
}

/* ---------------------------------------------------------------------------------------------- */
/* values                                                                                         */

static int small_value(const scen_t *s, int v, MPI_Offset idx) {
    return (int)(((long long)v * 29 + (long long)idx * 7 + s->salt) % 101);
}

num_t scen_value(const scen_t *s, int v, MPI_Offset idx) {
    int x = s->vars[v].xtype, val = small_value(s, v, idx);
    if (x == NC_CHAR) return num_i('A' + val % 26);
    return num_of(x, val);
}

num_t scen_expected(const scen_t *s, int v, MPI_Offset idx) {
    const var_t *V = &s->vars[v];
    return V->written[idx] == 2 ? scen_over_value(s, v, idx) : V->written[idx] ? scen_value(s, v, idx) : V->fill;
}

num_t scen_cancel_value(const scen_t *s, int v, MPI_Offset idx) {
    /* in 0..100 like the real values (so never a fill value) but different from them; idx may lie
     * beyond the records */
    int x = s->vars[v].xtype, val = (small_value(s, v, idx) + 50) % 101;
    if (x == NC_CHAR) return num_i('a' + val % 26);
    return num_of(x, val);
}

num_t scen_over_value(const scen_t *s, int v, MPI_Offset idx) {
    int x = s->vars[v].xtype, val = (small_value(s, v, idx) + 25) % 101; /* (as scen_cancel_value) */
    if (x == NC_CHAR) return num_i('0' + val % 10);
    return num_of(x, val);
}

num_t req_put_value(const scen_t *s, const req_t *q, MPI_Offset idx) {
    if (q->layer == LAYER_OVER) return scen_over_value(s, q->var, idx);
    return q->cancel || q->layer == LAYER_UNDER ? scen_cancel_value(s, q->var, idx) : scen_value(s, q->var, idx);
}

/* ---------------------------------------------------------------------------------------------- */
/* regions and layouts                                                                            */

static MPI_Offset prod(const MPI_Offset *c, int n) {
    MPI_Offset p = 1;
    for (int i = 0; i < n; i++) p *= c[i];
    return p;
}

static void unravel(MPI_Offset k, const MPI_Offset *count, int nd, MPI_Offset *t) {
    for (int i = nd - 1; i >= 0; i--) {
        t[i] = count[i] ? k % count[i] : 0;
        k = count[i] ? k / count[i] : 0;
    }
}

void req_region(const scen_t *s, const req_t *q, MPI_Offset *start, MPI_Offset *count, MPI_Offset *stride) {
    const var_t *V = &s->vars[q->var];
    for (int i = 0; i < V->ndims; i++) {
        start[i] = q->api == API_VAR ? 0 : q->start[i];
        count[i] = q->api == API_VAR ? V->shape[i] : q->api == API_VAR1 ? 1 : q->count[i];
        stride[i] = (q->api == API_VARS || q->api == API_VARM) ? q->stride[i] : 1;
    }
}

MPI_Offset req_nelems(const scen_t *s, const req_t *q) {
    const var_t *V = &s->vars[q->var];
    if (q->api == API_VARN) {
        MPI_Offset n = 0;
        for (int b = 0; b < q->nbox; b++) n += q->nullcounts ? 1 : prod(s->boxes[q->box0 + b].count, V->ndims);
        return n;
    }
    MPI_Offset start[SC_MAXDIMS], count[SC_MAXDIMS], stride[SC_MAXDIMS];
    req_region(s, q, start, count, stride);
    return prod(count, V->ndims);
}

MPI_Offset req_element_index(const scen_t *s, const req_t *q, const MPI_Offset *start, const MPI_Offset *count,
                             const MPI_Offset *stride, MPI_Offset k) {
    const var_t *V = &s->vars[q->var];
    MPI_Offset t[SC_MAXDIMS], idx = 0;
    if (q->api == API_VARN) { /* the boxes one after the other, each in row-major order */
        for (int b = 0; b < q->nbox; b++) {
            const box_t *B = &s->boxes[q->box0 + b];
            MPI_Offset ones[SC_MAXDIMS] = {1, 1, 1, 1};
            const MPI_Offset *bc = q->nullcounts ? ones : B->count;
            MPI_Offset n = prod(bc, V->ndims);
            if (k >= n) {
                k -= n;
                continue;
            }
            unravel(k, bc, V->ndims, t);
            for (int i = 0; i < V->ndims; i++) idx = idx * V->shape[i] + B->start[i] + t[i];
            return idx;
        }
        return -1; /* not reached */
    }
    unravel(k, count, V->ndims, t);
    for (int i = 0; i < V->ndims; i++) idx = idx * V->shape[i] + start[i] + t[i] * stride[i];
    return idx;
}

void layout_make(const scen_t *s, const req_t *q, layout_t *L) {
    const var_t *V = &s->vars[q->var];
    int nd = V->ndims;
    MPI_Offset start[SC_MAXDIMS], count[SC_MAXDIMS], stride[SC_MAXDIMS], t[SC_MAXDIMS];
    req_region(s, q, start, count, stride);
    memset(L, 0, sizeof *L);
    L->n = req_nelems(s, q);
    L->mt = q->flex == FX_NULL ? xtype_natural_mt(V->xtype) : q->mt;
    L->elsize = mt_size(L->mt);
    L->bufcount_elems = L->n;
    L->off = malloc(sizeof(size_t) * (size_t)(L->n ? L->n : 1));
    size_t sz = (size_t)L->elsize, maxp = 0;
    MPI_Offset n = L->n;
    for (MPI_Offset k = 0; k < n; k++) {
        MPI_Offset p = k;
        if (q->api == API_VARM) {
            unravel(k, count, nd, t);
            p = 0;
            for (int i = 0; i < nd; i++) p += t[i] * q->imap[i];
        }
        if ((size_t)p > maxp) maxp = (size_t)p;
        size_t off;
        switch (q->flex) {
        case FX_SUBARRAY: {
            MPI_Offset u[SC_MAXDIMS];
            unravel(p, count, nd, u);
            off = 0;
            for (int i = 0; i < nd; i++) off = off * (size_t)(count[i] + 2 * q->fxparam) + (size_t)(u[i] + q->fxparam);
            off *= sz;
            break;
        }
        case FX_VECTOR: off = (size_t)p * (size_t)q->fxparam * sz; break;
        case FX_RESIZED: off = (size_t)p * (size_t)q->fxparam * sz; break;
        case FX_INDEXED: off = (size_t)(n - 1 - p) * (size_t)q->fxparam * sz; break;
        default: off = (size_t)p * sz; break;
        }
        L->off[k] = off;
    }
    if (n == 0) {
        L->bytes = 0;
        return;
    }
    switch (q->flex) {
    case FX_SUBARRAY: {
        size_t b = sz;
        for (int i = 0; i < nd; i++) b *= (size_t)(count[i] + 2 * q->fxparam);
        L->bytes = b;
        break;
    }
    case FX_VECTOR: L->bytes = ((size_t)(n - 1) * (size_t)q->fxparam + 1) * sz; break;
    case FX_RESIZED: L->bytes = (size_t)n * (size_t)q->fxparam * sz; break;
    case FX_INDEXED: L->bytes = ((size_t)(n - 1) * (size_t)q->fxparam + 1) * sz; break;
    default: L->bytes = (maxp + 1) * sz; break;
    }
    if (q->flex == FX_NONE || q->flex == FX_BASIC || q->flex == FX_NEG1 || q->flex == FX_NULL ||
        q->flex == FX_CONTIG)
        L->bufcount_elems = (MPI_Offset)(maxp + 1);
}

void layout_free(layout_t *L) {
    free(L->off);
    L->off = NULL;
}

/* ---------------------------------------------------------------------------------------------- */
/* generation                                                                                     */

typedef struct {
    MPI_Offset start[SC_MAXDIMS], count[SC_MAXDIMS], stride[SC_MAXDIMS];
    int dropped; /* never written (fill on): a target for a cancelled put */
} lat_t;

typedef struct {
    lat_t *a;
    int n, cap;
} latv_t;

static void lat_push(latv_t *v, const lat_t *l) {
    if (v->n == v->cap) {
        v->cap = v->cap ? 2 * v->cap : 16;
        v->a = realloc(v->a, sizeof(lat_t) * (size_t)v->cap);
    }
    v->a[v->n++] = *l;
}

static req_t *push_req(req_t **arr, int *n) {
    *arr = realloc(*arr, sizeof(req_t) * (size_t)(*n + 1));
    req_t *q = &(*arr)[(*n)++];
    memset(q, 0, sizeof *q);
    for (int i = 0; i < SC_MAXDIMS; i++) q->stride[i] = 1;
    return q;
}

/* A new request at position pos of the list (the order in which a rank issues them). */
static req_t *insert_req(req_t **arr, int *n, int pos) {
    push_req(arr, n);
    memmove(&(*arr)[pos + 1], &(*arr)[pos], sizeof(req_t) * (size_t)(*n - 1 - pos));
    req_t *q = &(*arr)[pos];
    memset(q, 0, sizeof *q);
    for (int i = 0; i < SC_MAXDIMS; i++) q->stride[i] = 1;
    return q;
}

/* Is a feature turned off by XFER_AVOID (comma-separated names; see prop.py --avoid)? The random
 * draws are made anyway, so the rest of the scenario stays as close as possible. */
static int avoiding(const scen_t *s, const char *feature) {
    size_t n = strlen(feature);
    for (const char *p = s->avoid; (p = strstr(p, feature)) != NULL; p += n)
        if ((p == s->avoid || p[-1] == ',') && (p[n] == 0 || p[n] == ',')) return 1;
    return 0;
}

typedef struct {
    box_t *a;
    int n, cap;
} boxv_t;

static void box_push(boxv_t *v, const box_t *b) {
    if (v->n == v->cap) {
        v->cap = v->cap ? 2 * v->cap : 16;
        v->a = realloc(v->a, sizeof(box_t) * (size_t)v->cap);
    }
    v->a[v->n++] = *b;
}

/* Make q a varn request with the boxes b[0..n) (copied to the scenario's pool, in this order). */
static void set_boxes(scen_t *s, req_t *q, const box_t *b, int n) {
    s->boxes = realloc(s->boxes, sizeof(box_t) * (size_t)(s->nboxes + n + 1));
    if (n) memcpy(s->boxes + s->nboxes, b, sizeof(box_t) * (size_t)n);
    q->api = API_VARN;
    q->box0 = s->nboxes;
    q->nbox = n;
    s->nboxes += n;
}

static void make_att(rng_t *r, att_t *a, const char *name, int salt, int k) {
    memset(a, 0, sizeof *a);
    snprintf(a->name, sizeof a->name, "%s", name);
    a->xtype = XTYPES[rnd(r, 0, NXTYPES - 1)];
    a->len = rnd(r, 1, SC_MAXATTLEN);
    if (a->xtype == NC_CHAR) {
        a->put_mt = MT_TEXT;
        for (int j = 0; j < a->len; j++) a->vals[j] = num_i('a' + (k * 7 + j * 3 + salt) % 26);
    } else {
        a->put_mt = chance(r, 20) ? -1 : rnd(r, MT_SCHAR, MT_ULONGLONG); /* -1: ncmpi_put_att (void *) */
        for (int j = 0; j < a->len; j++) a->vals[j] = num_of(a->xtype, (k * 13 + j * 5 + salt) % 101);
    }
}

static num_t custom_fill(rng_t *r, int x) {
    switch (x) {
    case NC_CHAR: return num_i(chance(r, 50) ? '*' : '#');
    case NC_FLOAT: return num_f(rnd(r, 101, 126) + (chance(r, 30) ? 0.5 : 0.0));
    case NC_DOUBLE: return chance(r, 20) ? num_d(-rnd(r, 1, 50) - 0.25) : num_d(rnd(r, 101, 126) + (chance(r, 30) ? 0.5 : 0.0));
    case NC_UBYTE: return num_u((unsigned)(chance(r, 30) ? rnd(r, 200, 254) : rnd(r, 101, 126)));
    case NC_USHORT: case NC_UINT: case NC_UINT64:
        return num_u((unsigned)(chance(r, 30) ? rnd(r, 300, 30000) : rnd(r, 101, 126)));
    default: return num_i(chance(r, 30) ? -rnd(r, 1, 50) : rnd(r, 101, 126));
    }
}

static void mark_written(scen_t *s, const req_t *q) {
    MPI_Offset start[SC_MAXDIMS], count[SC_MAXDIMS], stride[SC_MAXDIMS];
    req_region(s, q, start, count, stride);
    MPI_Offset n = req_nelems(s, q);
    unsigned char *w = s->vars[q->var].written;
    for (MPI_Offset k = 0; k < n; k++) {
        unsigned char *e = &w[req_element_index(s, q, start, count, stride, k)];
        if (q->layer == LAYER_OVER) *e = 2;
        else if (!*e) *e = 1;
    }
}

static void finish_var(var_t *V) {
    V->nelems = prod(V->shape, V->ndims);
    V->written = calloc((size_t)V->nelems, 1);
}

/* Decompose variable v into disjoint lattices (stream A). */
static void gen_pieces(rng_t *r, const var_t *V, latv_t *out) {
    latv_t leaves = {0};
    lat_t whole;
    whole.dropped = 0;
    for (int i = 0; i < SC_MAXDIMS; i++) {
        whole.start[i] = 0;
        whole.count[i] = i < V->ndims ? V->shape[i] : 1;
        whole.stride[i] = 1;
    }
    lat_push(&leaves, &whole);
    int target = rnd(r, 1, 8);
    for (int attempt = 0; attempt < 40 && leaves.n < target && V->ndims > 0; attempt++) {
        int i = rnd(r, 0, leaves.n - 1), d = rnd(r, 0, V->ndims - 1);
        lat_t a = leaves.a[i];
        if (a.count[d] < 2) continue;
        MPI_Offset cut = rnd(r, 1, (int)a.count[d] - 1);
        lat_t b = a;
        a.count[d] = cut;
        b.start[d] += cut;
        b.count[d] -= cut;
        leaves.a[i] = a;
        lat_push(&leaves, &b);
    }
    for (int i = 0; i < leaves.n; i++) {
        lat_t l = leaves.a[i];
        MPI_Offset n = prod(l.count, V->ndims);
        int c = rnd(r, 0, 99);
        if (n >= 2 && n <= 8 && c < 15) { /* single elements */
            for (MPI_Offset k = 0; k < n; k++) {
                lat_t e = l;
                MPI_Offset t[SC_MAXDIMS];
                unravel(k, l.count, V->ndims, t);
                for (int d = 0; d < V->ndims; d++) {
                    e.start[d] = l.start[d] + t[d];
                    e.count[d] = 1;
                }
                lat_push(out, &e);
            }
        } else if (c < 50 && n >= 2) { /* interleaved sub-lattices along one or two dimensions */
            int d1 = -1, d2 = -1;
            for (int tries = 0; tries < 8 && d1 < 0; tries++) {
                int d = rnd(r, 0, V->ndims - 1);
                if (l.count[d] >= 2) d1 = d;
            }
            if (d1 < 0) {
                lat_push(out, &l);
                continue;
            }
            if (chance(r, 30)) {
                int d = rnd(r, 0, V->ndims - 1);
                if (d != d1 && l.count[d] >= 2) d2 = d;
            }
            int k1 = rnd(r, 2, (int)(l.count[d1] < 3 ? l.count[d1] : 3));
            int k2 = d2 >= 0 ? rnd(r, 2, (int)(l.count[d2] < 3 ? l.count[d2] : 3)) : 1;
            for (int o1 = 0; o1 < k1; o1++)
                for (int o2 = 0; o2 < k2; o2++) {
                    lat_t e = l;
                    e.start[d1] += o1;
                    e.stride[d1] = k1;
                    e.count[d1] = (l.count[d1] - o1 + k1 - 1) / k1;
                    if (d2 >= 0) {
                        e.start[d2] += o2;
                        e.stride[d2] = k2;
                        e.count[d2] = (l.count[d2] - o2 + k2 - 1) / k2;
                    }
                    for (int d = 0; d < V->ndims; d++)
                        if (e.count[d] == 1) e.stride[d] = 1;
                    lat_push(out, &e);
                }
        } else {
            lat_push(out, &l);
        }
    }
    free(leaves.a);
}

/* Memory side of a request: typed memory type, or flexible datatype. */
static void choose_memory(rng_t *r, const scen_t *s, req_t *q, int allow_flex) {
    const var_t *V = &s->vars[q->var];
    MPI_Offset start[SC_MAXDIMS], count[SC_MAXDIMS], stride[SC_MAXDIMS];
    req_region(s, q, start, count, stride);
    MPI_Offset n = req_nelems(s, q);
    int nat = xtype_natural_mt(V->xtype);
    if (V->xtype == NC_CHAR) q->mt = MT_TEXT;
    else q->mt = chance(r, 25) ? nat : rnd(r, MT_SCHAR, MT_ULONGLONG);
    q->flex = FX_NONE;
    if (allow_flex && chance(r, 45)) {
        int opts[FX_COUNT], no = 0;
        opts[no++] = FX_BASIC;
        opts[no++] = FX_NEG1;
        opts[no++] = FX_NULL;
        if (n > 0) {
            if (V->ndims > 0 && q->api != API_VARN) opts[no++] = FX_SUBARRAY;
            opts[no++] = FX_VECTOR;
            opts[no++] = FX_RESIZED;
            opts[no++] = FX_INDEXED;
            if (n >= 2) opts[no++] = FX_CONTIG;
        }
        q->flex = opts[rnd(r, 0, no - 1)];
        switch (q->flex) {
        case FX_NULL: q->mt = nat; break;
        case FX_SUBARRAY: q->fxparam = rnd(r, 1, 2); break;
        case FX_VECTOR: case FX_RESIZED: q->fxparam = rnd(r, 2, 3); break;
        case FX_INDEXED: q->fxparam = rnd(r, 1, 2); break;
        case FX_CONTIG: {
            int divs[16], nd = 0;
            for (int c = 2; c <= n && nd < 16; c++)
                if (n % c == 0) divs[nd++] = c;
            q->fxparam = divs[rnd(r, 0, nd - 1)];
            break;
        }
        default: break;
        }
    }
    if (q->api == API_VARM) { /* a transposed, possibly padded (typed API only) memory layout */
        int nd = V->ndims, perm[SC_MAXDIMS];
        for (int i = 0; i < nd; i++) perm[i] = i;
        shuffle(r, perm, nd);
        MPI_Offset m = 1;
        for (int j = nd - 1; j >= 0; j--) {
            int d = perm[j];
            q->imap[d] = m;
            m *= count[d] + (q->flex == FX_NONE && chance(r, 40) ? rnd(r, 1, 2) : 0);
        }
    }
}

static void gen_structure(scen_t *s, rng_t *r, latv_t pieces[SC_MAXVARS]) {
    s->salt = rnd(r, 0, 100);
    int has_rec = chance(r, 55);
    s->nrec = has_rec ? rnd(r, 1, 3) : 0;
    int nfixed = rnd(r, 1, 4);
    s->ndims = nfixed + has_rec;
    s->recdim = has_rec ? rnd(r, 0, s->ndims - 1) : -1;
    int fixed_ids[SC_MAXFDIMS], nf = 0;
    for (int d = 0; d < s->ndims; d++) {
        if (d == s->recdim) {
            snprintf(s->dims[d].name, SC_NAMELEN, "time");
            s->dims[d].len = NC_UNLIMITED;
        } else {
            snprintf(s->dims[d].name, SC_NAMELEN, "d%d", d);
            s->dims[d].len = chance(r, 15) ? 1 : rnd(r, 2, 7);
            fixed_ids[nf++] = d;
        }
    }
    s->setfill = chance(r, 25);
    s->ngatts = rnd(r, 0, 3);
    for (int a = 0; a < s->ngatts; a++) {
        char name[SC_NAMELEN];
        snprintf(name, sizeof name, "g%d_%s", a, a == 0 ? "title" : a == 1 ? "history" : "version");
        make_att(r, &s->gatts[a], name, s->salt, 100 + a);
    }
    s->nvars = rnd(r, 1, 3);
    int any_rec = 0;
    for (int v = 0; v < s->nvars; v++) {
        var_t *V = &s->vars[v];
        snprintf(V->name, SC_NAMELEN, "v%d", v);
        V->xtype = XTYPES[rnd(r, 0, NXTYPES - 1)];
        V->is_rec = has_rec && chance(r, 60);
        if (V->is_rec) {
            V->ndims = rnd(r, 1, 4);
            V->dimids[0] = s->recdim;
            V->shape[0] = s->nrec;
            any_rec = 1;
        } else {
            V->ndims = chance(r, 15) ? 0 : rnd(r, 1, 4);
        }
        for (int i = V->is_rec; i < V->ndims; i++) {
            V->dimids[i] = fixed_ids[rnd(r, 0, nf - 1)];
            V->shape[i] = s->dims[V->dimids[i]].len;
        }
        finish_var(V);
        /* attributes and fill */
        int nreg = rnd(r, 0, 2);
        int dvfpick = rnd(r, 0, 99);
        V->dvf = dvfpick < 60 ? DVF_NONE : dvfpick < 75 ? DVF_FILL_NULL : dvfpick < 90 ? DVF_FILL_CUSTOM : DVF_NOFILL;
        int fill_attr = V->dvf != DVF_FILL_CUSTOM && chance(r, 30);
        int custom = fill_attr || V->dvf == DVF_FILL_CUSTOM;
        V->fill = custom ? custom_fill(r, V->xtype) : num_default_fill(V->xtype);
        V->fill_on = V->dvf == DVF_FILL_NULL || V->dvf == DVF_FILL_CUSTOM ? 1 : V->dvf == DVF_NOFILL ? 0 : s->setfill;
        int fillpos = fill_attr ? rnd(r, 0, nreg) : -1;
        static const char *anames[] = {"units", "scale", "note"};
        for (int k = 0, reg = 0; k < nreg + (fill_attr ? 1 : 0); k++) {
            att_t *A = &V->atts[V->natts++];
            if (k == fillpos) {
                memset(A, 0, sizeof *A);
                snprintf(A->name, SC_NAMELEN, "_FillValue");
                A->xtype = V->xtype;
                A->len = 1;
                A->put_mt = chance(r, 50) ? -1 : xtype_natural_mt(V->xtype);
                A->is_fill = 1;
                A->vals[0] = V->fill;
            } else {
                make_att(r, A, anames[reg], s->salt, v * 10 + reg);
                reg++;
            }
        }
        if (V->dvf == DVF_FILL_CUSTOM) { /* def_var_fill creates the attribute */
            att_t *A = &V->atts[V->natts++];
            memset(A, 0, sizeof *A);
            snprintf(A->name, SC_NAMELEN, "_FillValue");
            A->xtype = V->xtype;
            A->len = 1;
            A->put_mt = -1;
            A->is_fill = 2;
            A->vals[0] = V->fill;
        }
        /* the decomposition; with fill on some pieces are never written */
        gen_pieces(r, V, &pieces[v]);
        if (V->fill_on) {
            int drop_all = chance(r, 8), keep_all = chance(r, 25), kept = 0;
            for (int i = 0; i < pieces[v].n; i++)
                if (!keep_all && (drop_all || chance(r, 30))) pieces[v].a[i].dropped = 1;
                else kept++;
            (void)kept;
        }
    }
    if (!any_rec) s->nrec = 0;
    for (int v = 0; v < s->nvars; v++)
        if (s->vars[v].is_rec) s->vars[v].shape[0] = s->nrec;
}

/* A random lattice inside variable V; kind 0 single, 1 box, 2 strided, 3 large box, 4 empty. */
static void random_region(rng_t *r, const var_t *V, int kind, req_t *q) {
    for (int d = 0; d < V->ndims; d++) {
        int len = (int)V->shape[d];
        int s = kind == 2 ? rnd(r, 1, 3) : 1;
        int st = kind == 3 ? (chance(r, 50) ? 0 : rnd(r, 0, len - 1)) : rnd(r, 0, len - 1);
        int maxc = (len - 1 - st) / s + 1;
        int c = kind == 0 ? 1 : kind == 3 || chance(r, 35) ? maxc : rnd(r, 1, maxc);
        q->start[d] = st;
        q->count[d] = c;
        q->stride[d] = c == 1 ? 1 : s;
    }
    if (kind == 4 && V->ndims > 0) q->count[rnd(r, 0, V->ndims - 1)] = 0;
}

/* A deliberately wrong request on variable v (independent mode). */
static void make_error(rng_t *r, scen_t *s, req_t *q, int is_writer) {
    const var_t *V = &s->vars[q->var];
    int fixed_dims[SC_MAXDIMS], nfd = 0;
    for (int d = V->is_rec; d < V->ndims; d++) fixed_dims[nfd++] = d;
    if (!is_writer && V->is_rec) fixed_dims[nfd++] = 0; /* reading beyond the records is an error too */
    int opts[4], no = 0;
    if (nfd) {
        opts[no++] = ERR_COORDS;
        opts[no++] = ERR_EDGE;
    }
    opts[no++] = ERR_CHAR;
    opts[no++] = ERR_NOTVAR;
    q->err = opts[rnd(r, 0, no - 1)];
    q->mode = MODE_INDEP;
    q->api = V->ndims ? API_VARA : API_VAR1;
    q->flex = FX_NONE;
    int nat = xtype_natural_mt(V->xtype);
    q->mt = V->xtype == NC_CHAR ? MT_TEXT : (nat == MT_TEXT ? MT_INT : rnd(r, MT_SCHAR, MT_ULONGLONG));
    for (int d = 0; d < V->ndims; d++) {
        q->start[d] = 0;
        q->count[d] = 1;
    }
    if (q->err == ERR_COORDS || q->err == ERR_EDGE) {
        int d = fixed_dims[rnd(r, 0, nfd - 1)];
        q->api = API_VARA;
        if (q->err == ERR_COORDS) q->start[d] = V->shape[d] + 2;
        else q->count[d] = V->shape[d] + 1;
    } else if (q->err == ERR_CHAR) {
        q->mt = V->xtype == NC_CHAR ? rnd(r, MT_SCHAR, MT_ULONGLONG) : MT_TEXT;
    }
    if (chance(r, 25) && !avoiding(s, "varn")) { /* a varn with the bad box among good elements */
        box_t b[4];
        int nvalid = rnd(r, 0, 2), pos = rnd(r, 0, nvalid), nb = 0, inside = 1;
        for (int d = 0; d < V->ndims; d++) inside &= V->shape[d] > 0;
        for (int i = 0; i <= nvalid; i++) {
            memset(&b[nb], 0, sizeof b[nb]);
            if (i == pos) {
                for (int d = 0; d < V->ndims; d++) b[nb].start[d] = q->start[d], b[nb].count[d] = q->count[d];
                nb++;
            } else if (inside) {
                for (int d = 0; d < V->ndims; d++) b[nb].start[d] = rnd(r, 0, (int)V->shape[d] - 1), b[nb].count[d] = 1;
                nb++;
            }
        }
        q->nullcounts = q->err != ERR_EDGE && chance(r, 50);
        set_boxes(s, q, b, nb);
    }
}

int scen_zero_partner(const scen_t *s, int v) {
    (void)v;
    for (int u = 0; u < s->nvars; u++)
        if (!s->vars[u].is_rec && s->vars[u].ndims > 0) return u;
    return -1;
}

/* PnetCDF 1.12 ignores the stride of a blocking vars/varm access along the record dimension of a 1-D
 * record variable when the file has more than one record variable (it reads/writes consecutive
 * records; nonblocking requests are right): such requests are made nonblocking or unstrided. */
static int bad_strided_rec(const scen_t *s, const req_t *q) {
    const var_t *V = &s->vars[q->var];
    int nrecvars = 0;
    for (int v = 0; v < s->nvars; v++) nrecvars += s->vars[v].is_rec;
    return V->is_rec && V->ndims == 1 && nrecvars > 1 && (q->api == API_VARS || q->api == API_VARM) &&
           q->count[0] > 1 && q->stride[0] > 1 && (q->mode == MODE_COLL || q->mode == MODE_INDEP);
}

/* varn: a lattice falls into one unit-stride box per position along its strided dimensions, and,
 * for a record variable, per record: PnetCDF 1.12.3 reads and writes a varn box that spans several
 * records as if the records were contiguous in the file (wrong values, or MPI_ERR_TYPE from
 * MPI_File_set_view when boxes interleave), so no varn box has count[0] > 1 on a record variable. */
static int varn_split_dim(const var_t *V, const lat_t *l, int d) { return l->stride[d] > 1 || (d == 0 && V->is_rec); }

static MPI_Offset lattice_nboxes(const var_t *V, const lat_t *l) {
    MPI_Offset n = 1;
    for (int d = 0; d < V->ndims; d++)
        if (varn_split_dim(V, l, d)) n *= l->count[d];
    return n;
}

static void lattice_to_boxes(const var_t *V, const lat_t *l, boxv_t *out) {
    MPI_Offset n = lattice_nboxes(V, l), sc[SC_MAXDIMS], t[SC_MAXDIMS];
    for (int d = 0; d < SC_MAXDIMS; d++) sc[d] = d < V->ndims && varn_split_dim(V, l, d) ? l->count[d] : 1;
    for (MPI_Offset k = 0; k < n; k++) {
        box_t b;
        memset(&b, 0, sizeof b);
        unravel(k, sc, V->ndims, t);
        for (int d = 0; d < V->ndims; d++) {
            b.start[d] = l->start[d] + (varn_split_dim(V, l, d) ? t[d] * l->stride[d] : 0);
            b.count[d] = varn_split_dim(V, l, d) ? 1 : l->count[d];
        }
        box_push(out, &b);
    }
}

/* A zero-length box (one count 0) of a varn. A writer's may start beyond the records (PnetCDF then
 * leaves the number of records alone), a reader's lies inside the variable. */
static void add_zero_box(rng_t *r, const scen_t *s, const var_t *V, boxv_t *bv, int writer) {
    box_t z;
    memset(&z, 0, sizeof z);
    for (int d = 0; d < V->ndims; d++) {
        int hi = (int)V->shape[d] - 1;
        if (d == 0 && V->is_rec && writer && !avoiding(s, "zero-beyond")) hi = (int)s->nrec + 1;
        z.start[d] = rnd(r, 0, hi < 0 ? 0 : hi);
        z.count[d] = 1;
    }
    z.count[rnd(r, 0, V->ndims - 1)] = 0;
    box_push(bv, &z);
}

/* Turn the boxes of a writer's varn into the call's list: random cuts, perhaps single elements
 * (then perhaps counts == NULL), perhaps a zero-length box, in random order. */
static void writer_varn(rng_t *r, scen_t *s, const var_t *V, boxv_t *bv, req_t *q) {
    int cuts = rnd(r, 0, 3);
    for (int c = 0; c < cuts && V->ndims > 0; c++) {
        int i = rnd(r, 0, bv->n - 1), d = rnd(r, 0, V->ndims - 1);
        box_t a = bv->a[i];
        if (a.count[d] < 2) continue;
        MPI_Offset cut = rnd(r, 1, (int)a.count[d] - 1);
        box_t b = a;
        a.count[d] = cut;
        b.start[d] += cut;
        b.count[d] -= cut;
        bv->a[i] = a;
        box_push(bv, &b);
    }
    MPI_Offset n = 0;
    for (int i = 0; i < bv->n; i++) n += prod(bv->a[i].count, V->ndims);
    q->nullcounts = 0;
    if (n <= 12 && chance(r, 35)) { /* one element per box */
        boxv_t e = {0};
        for (int i = 0; i < bv->n; i++) {
            MPI_Offset m = prod(bv->a[i].count, V->ndims), t[SC_MAXDIMS];
            for (MPI_Offset k = 0; k < m; k++) {
                box_t b;
                memset(&b, 0, sizeof b);
                unravel(k, bv->a[i].count, V->ndims, t);
                for (int d = 0; d < V->ndims; d++) {
                    b.start[d] = bv->a[i].start[d] + t[d];
                    b.count[d] = 1;
                }
                box_push(&e, &b);
            }
        }
        free(bv->a);
        *bv = e;
        q->nullcounts = chance(r, 60);
    }
    if (V->ndims > 0 && !q->nullcounts && chance(r, 10)) add_zero_box(r, s, V, bv, 1);
    int *perm = malloc(sizeof(int) * (size_t)(bv->n + 1));
    box_t *b = malloc(sizeof(box_t) * (size_t)(bv->n + 1));
    for (int i = 0; i < bv->n; i++) perm[i] = i;
    shuffle(r, perm, bv->n);
    for (int i = 0; i < bv->n; i++) b[i] = bv->a[perm[i]];
    set_boxes(s, q, b, bv->n);
    free(b);
    free(perm);
}

/* A reader's varn: 1..5 random boxes (or single elements) that do not overlap each other (PnetCDF
 * 1.12 puts wrong values into the buffer of a get_varn whose boxes overlap, blocking or not), and
 * perhaps a zero-length box. */
static void reader_varn(rng_t *r, scen_t *s, const var_t *V, req_t *q) {
    boxv_t bv = {0};
    unsigned char *seen = calloc((size_t)V->nelems + 1, 1);
    int nb = rnd(r, 1, 5), singles = chance(r, 35);
    for (int a = 0; a < 2 * nb && bv.n < nb; a++) {
        req_t t;
        memset(&t, 0, sizeof t);
        t.var = q->var;
        t.api = API_VARA;
        random_region(r, V, singles ? 0 : chance(r, 60) ? 1 : 0, &t);
        if (V->is_rec) t.count[0] = 1; /* see varn_split_dim */
        MPI_Offset st[SC_MAXDIMS], ct[SC_MAXDIMS], sd[SC_MAXDIMS], n = req_nelems(s, &t);
        req_region(s, &t, st, ct, sd);
        int overlap = 0;
        for (MPI_Offset k = 0; k < n && !overlap; k++) overlap = seen[req_element_index(s, &t, st, ct, sd, k)];
        if (overlap) continue;
        for (MPI_Offset k = 0; k < n; k++) seen[req_element_index(s, &t, st, ct, sd, k)] = 1;
        box_t b;
        memset(&b, 0, sizeof b);
        for (int d = 0; d < V->ndims; d++) b.start[d] = t.start[d], b.count[d] = t.count[d];
        box_push(&bv, &b);
    }
    q->nullcounts = singles && chance(r, 60);
    if (V->ndims > 0 && !q->nullcounts && chance(r, 10)) {
        add_zero_box(r, s, V, &bv, 0);
        int pos = rnd(r, 0, bv.n - 1);
        box_t z = bv.a[bv.n - 1];
        memmove(&bv.a[pos + 1], &bv.a[pos], sizeof(box_t) * (size_t)(bv.n - 1 - pos));
        bv.a[pos] = z;
    }
    set_boxes(s, q, bv.a, bv.n);
    free(bv.a);
    free(seen);
}

/* Posted, then cancelled: when, and the extra checks around it. */
static void choose_cancel(rng_t *r, const scen_t *s, req_t *q) {
    q->cancel = rnd(r, CANCEL_NOW, CANCEL_ALL);
    q->cancel_stale = q->cancel != CANCEL_ALL && chance(r, 30) && !avoiding(s, "stale-cancel");
    q->cancel_inwait = q->cancel != CANCEL_ALL && chance(r, 40);
}

/* Collective access to a scalar needs a zero-length partner request for the ranks without one. */
static int fix_mode(const scen_t *s, int v, int mode, int nranks) {
    if (mode == MODE_COLL && s->vars[v].ndims == 0 && nranks > 1 && scen_zero_partner(s, v) < 0) return MODE_INDEP;
    return mode;
}

/* A collective varn on a scalar deadlocks in PnetCDF 1.12.3 when another rank calls it with num=0
 * (the zero-length participation of a varn round); all ranks with num=1 would work, but rounds are
 * not built that way: such a varn is made independent. */
static void fix_varn_mode(const scen_t *s, req_t *q, int nranks) {
    if (q->api == API_VARN && q->mode == MODE_COLL && s->vars[q->var].ndims == 0 && nranks > 1) q->mode = MODE_INDEP;
}

static void gen_writers(scen_t *s, rng_t *r, latv_t pieces[SC_MAXVARS]) {
    int active[64], na = 0;
    for (int p = 0; p < s->M; p++)
        if (chance(r, 75) && na < 64) active[na++] = p;
    if (!na) active[na++] = rnd(r, 0, s->M - 1);
    for (int v = 0; v < s->nvars; v++) {
        const var_t *V = &s->vars[v];
        unsigned char *taken = calloc((size_t)pieces[v].n + 1, 1);
        for (int i = 0; i < pieces[v].n; i++) {
            const lat_t *l = &pieces[v].a[i];
            if (l->dropped || taken[i]) continue; /* dropped: never written; or put by an earlier varn */
            req_t *q = push_req(&s->w, &s->nw);
            q->var = v;
            q->rank = active[rnd(r, 0, na - 1)];
            q->mode = fix_mode(s, v, rnd(r, 0, MODE_COUNT - 1), s->M);
            int whole = !V->is_rec, single = 1, box = 1;
            for (int d = 0; d < V->ndims; d++) {
                q->start[d] = l->start[d];
                q->count[d] = l->count[d];
                q->stride[d] = l->stride[d];
                if (l->count[d] != V->shape[d] || l->stride[d] != 1) whole = 0;
                if (l->count[d] != 1) single = 0;
                if (l->stride[d] != 1) box = 0;
            }
            int opts[API_COUNT], no = 0;
            if (whole) opts[no++] = API_VAR;
            if (single) opts[no++] = API_VAR1;
            if (box) opts[no++] = API_VARA;
            opts[no++] = API_VARS;
            opts[no++] = API_VARM;
            if (lattice_nboxes(V, l) <= 64) opts[no++] = API_VARN;
            q->api = opts[rnd(r, 0, no - 1)];
            if (q->api == API_VARN && avoiding(s, "varn")) q->api = API_VARS;
            if (q->api == API_VARN) { /* the piece's boxes, perhaps with the next pieces of the variable */
                boxv_t bv = {0};
                lattice_to_boxes(V, l, &bv);
                if (chance(r, 40))
                    for (int j = i + 1, more = rnd(r, 1, 2); j < pieces[v].n && more > 0; j++) {
                        const lat_t *m = &pieces[v].a[j];
                        if (m->dropped || taken[j] || lattice_nboxes(V, m) > 64) continue;
                        lattice_to_boxes(V, m, &bv);
                        taken[j] = 1;
                        more--;
                    }
                writer_varn(r, s, V, &bv, q);
                free(bv.a);
                fix_varn_mode(s, q, s->M);
            }
            if (bad_strided_rec(s, q)) q->mode = MODE_NB;
            choose_memory(r, s, q, 1);
        }
        free(taken);
    }
    if (chance(r, 30)) { /* a deliberately wrong put */
        req_t *q = push_req(&s->w, &s->nw);
        q->var = rnd(r, 0, s->nvars - 1);
        q->rank = rnd(r, 0, s->M - 1);
        make_error(r, s, q, 1);
    }
    if (chance(r, 35)) { /* iput/bput of different values to elements nobody writes, cancelled */
        int nc = rnd(r, 1, 2);
        for (int c = 0; c < nc; c++) {
            int ndrop = 0, nrecv = 0;
            for (int v = 0; v < s->nvars; v++) {
                for (int i = 0; i < pieces[v].n; i++) ndrop += pieces[v].a[i].dropped;
                nrecv += s->vars[v].is_rec;
            }
            /* the never-written pieces, or beyond the records (the number of records must not change) */
            int beyond = nrecv > 0 && (ndrop == 0 || chance(r, 35));
            if (beyond && avoiding(s, "cancel-beyond")) beyond = 0;
            if (!beyond && ndrop == 0) continue;
            lat_t l;
            memset(&l, 0, sizeof l);
            int v = -1;
            if (beyond) {
                int k = rnd(r, 0, nrecv - 1);
                for (v = 0; v < s->nvars; v++)
                    if (s->vars[v].is_rec && k-- == 0) break;
                const var_t *V = &s->vars[v];
                l.start[0] = s->nrec + rnd(r, 0, 1);
                l.count[0] = 1;
                for (int d = 0; d < SC_MAXDIMS; d++) l.stride[d] = 1;
                for (int d = 1; d < V->ndims; d++) {
                    int len = (int)V->shape[d], st = rnd(r, 0, len - 1);
                    l.start[d] = st;
                    l.count[d] = rnd(r, 1, len - st);
                }
            } else {
                int k = rnd(r, 0, ndrop - 1);
                for (v = 0; v < s->nvars; v++) {
                    int i;
                    for (i = 0; i < pieces[v].n; i++)
                        if (pieces[v].a[i].dropped && k-- == 0) break;
                    if (i < pieces[v].n) {
                        l = pieces[v].a[i];
                        break;
                    }
                }
            }
            const var_t *V = &s->vars[v];
            req_t *q = insert_req(&s->w, &s->nw, rnd(r, 0, s->nw));
            q->var = v;
            q->rank = rnd(r, 0, s->M - 1);
            q->mode = chance(r, 50) ? MODE_NB : MODE_BPUT;
            choose_cancel(r, s, q);
            int whole = !beyond, single = 1, box = 1;
            for (int d = 0; d < V->ndims; d++) {
                q->start[d] = l.start[d];
                q->count[d] = l.count[d];
                q->stride[d] = l.stride[d];
                if (l.count[d] != V->shape[d] || l.stride[d] != 1) whole = 0;
                if (l.count[d] != 1) single = 0;
                if (l.stride[d] != 1) box = 0;
            }
            int opts[API_COUNT], no = 0;
            if (whole) opts[no++] = API_VAR;
            if (single) opts[no++] = API_VAR1;
            if (box) opts[no++] = API_VARA;
            opts[no++] = API_VARS;
            opts[no++] = API_VARM;
            if (lattice_nboxes(V, &l) <= 64 && !avoiding(s, "varn")) opts[no++] = API_VARN;
            q->api = opts[rnd(r, 0, no - 1)];
            if (q->api == API_VARN) {
                boxv_t bv = {0};
                lattice_to_boxes(V, &l, &bv);
                writer_varn(r, s, V, &bv, q);
                free(bv.a);
            }
            choose_memory(r, s, q, 1);
        }
    }
    for (int i = 0; i < MODE_COUNT; i++) {
        s->wphase[i] = i;
        s->wphase_forced[i] = chance(r, 30);
        s->wwait[i] = rnd(r, 0, WAIT_COUNT - 1);
    }
    s->nwphase = MODE_COUNT;
    shuffle(r, s->wphase, MODE_COUNT);
    s->wstale_wait = chance(r, 40) && !avoiding(s, "stale-wait");
}

static void gen_readers(scen_t *s, rng_t *r) {
    for (int v = 0; v < s->nvars; v++) { /* somebody reads every variable whole */
        const var_t *V = &s->vars[v];
        req_t *q = push_req(&s->r, &s->nr);
        q->var = v;
        q->rank = rnd(r, 0, s->N - 1);
        q->mode = fix_mode(s, v, rnd(r, 0, MODE_NB), s->N);
        int c = rnd(r, 0, 3);
        q->api = c == 0 ? API_VAR : c == 1 ? API_VARA : c == 2 ? API_VARS : API_VARM;
        for (int d = 0; d < V->ndims; d++) {
            q->start[d] = 0;
            q->count[d] = V->shape[d];
        }
        if (V->ndims > 0 && V->nelems == 0) q->api = API_VARA; /* no records: get_var of 0 records */
        choose_memory(r, s, q, 1);
    }
    for (int p = 0; p < s->N; p++) {
        for (int v = 0; v < s->nvars; v++) {
            const var_t *V = &s->vars[v];
            int k = rnd(r, 0, 3);
            for (int j = 0; j < k; j++) {
                if (V->nelems == 0) break;
                req_t *q = push_req(&s->r, &s->nr);
                q->var = v;
                q->rank = p;
                q->mode = fix_mode(s, v, rnd(r, 0, MODE_NB), s->N);
                if (chance(r, 15) && !avoiding(s, "varn")) {
                    reader_varn(r, s, V, q);
                    fix_varn_mode(s, q, s->N);
                    choose_memory(r, s, q, 1);
                    continue;
                }
                int kind = chance(r, 5) ? 4 : rnd(r, 0, 3);
                random_region(r, V, kind, q);
                switch (kind) {
                case 0: q->api = V->ndims == 0 || chance(r, 60) ? API_VAR1 : API_VARA; break;
                case 2: q->api = chance(r, 70) ? API_VARS : API_VARM; break;
                case 4: q->api = chance(r, 50) ? API_VARA : API_VARS; break;
                default: q->api = rnd(r, API_VARA, API_VARM); break;
                }
                if (V->ndims == 0 && q->api != API_VAR1) q->api = API_VAR1;
                choose_memory(r, s, q, 1);
            }
        }
        if (chance(r, 30)) {
            req_t *q = push_req(&s->r, &s->nr);
            q->var = rnd(r, 0, s->nvars - 1);
            q->rank = p;
            make_error(r, s, q, 0);
        }
    }
    if (chance(r, 35)) { /* igets that are cancelled: their buffers must stay as they were */
        int nc = rnd(r, 1, 2);
        for (int c = 0; c < nc; c++) {
            int v = rnd(r, 0, s->nvars - 1);
            const var_t *V = &s->vars[v];
            if (V->nelems == 0) continue;
            req_t *q = insert_req(&s->r, &s->nr, rnd(r, 0, s->nr));
            q->var = v;
            q->rank = rnd(r, 0, s->N - 1);
            q->mode = MODE_NB;
            choose_cancel(r, s, q);
            if (chance(r, 25) && !avoiding(s, "varn")) {
                reader_varn(r, s, V, q);
            } else {
                int kind = rnd(r, 0, 3);
                random_region(r, V, kind, q);
                q->api = kind == 0 ? API_VAR1 : kind == 2 ? (chance(r, 50) ? API_VARS : API_VARM)
                                               : kind == 3 && !V->is_rec && chance(r, 30) ? API_VAR : API_VARA;
                if (V->ndims == 0) q->api = API_VAR1;
            }
            choose_memory(r, s, q, 1);
        }
    }
    /* PnetCDF 1.12 delivers garbage to the later of two nonblocking gets of one rank that read the
     * same element (in one wait), so the nonblocking gets of a rank are kept disjoint: an iget that
     * overlaps an earlier one of its rank becomes a blocking get. (Cancelled igets are never read.) */
    for (int p = 0; p < s->N; p++) {
        unsigned char *seen[SC_MAXVARS] = {0};
        for (int i = 0; i < s->nr; i++) {
            req_t *q = &s->r[i];
            if (q->rank != p || q->err || q->cancel) continue;
            if (bad_strided_rec(s, q)) q->mode = MODE_NB;
            if (q->mode == MODE_NB && req_nelems(s, q) == 0 && avoiding(s, "zero-nb")) q->mode = MODE_INDEP;
            if (q->mode != MODE_NB) continue;
            const var_t *V = &s->vars[q->var];
            if (!seen[q->var]) seen[q->var] = calloc((size_t)V->nelems + 1, 1);
            MPI_Offset start[SC_MAXDIMS], count[SC_MAXDIMS], stride[SC_MAXDIMS];
            req_region(s, q, start, count, stride);
            MPI_Offset n = req_nelems(s, q);
            int overlap = 0;
            for (MPI_Offset k = 0; k < n && !overlap; k++) overlap = seen[q->var][req_element_index(s, q, start, count, stride, k)];
            if (overlap) {
                q->mode = fix_mode(s, q->var, rnd(r, MODE_COLL, MODE_INDEP), s->N);
                fix_varn_mode(s, q, s->N);
                if (bad_strided_rec(s, q)) q->stride[0] = 1; /* same start and count, so still inside */
                continue;
            }
            for (MPI_Offset k = 0; k < n; k++) seen[q->var][req_element_index(s, q, start, count, stride, k)] = 1;
        }
        for (int v = 0; v < SC_MAXVARS; v++) free(seen[v]);
    }
    for (int i = 0; i < 3; i++) {
        s->rphase[i] = i;
        s->rphase_forced[i] = chance(r, 30);
    }
    s->nrphase = 3;
    shuffle(r, s->rphase, 3);
    s->rwait = rnd(r, 0, WAIT_COUNT - 1);
    s->rstale_wait = chance(r, 40) && !avoiding(s, "stale-wait");
    for (int v = -1; v < s->nvars; v++) {
        const att_t *atts = v < 0 ? s->gatts : s->vars[v].atts;
        int n = v < 0 ? s->ngatts : s->vars[v].natts;
        for (int a = 0; a < n; a++)
            s->att_mt[v + 1][a] = atts[a].xtype == NC_CHAR ? -1 : rnd(r, MT_SCHAR, MT_ULONGLONG);
    }
}

/* The fixed scenario of the Fortran writer (xfer_writer_f.f90 implements exactly this). */
static void gen_fixed(scen_t *s) {
    s->salt = s->kase % 101;
    s->ndims = 4;
    s->recdim = 0;
    s->nrec = 2;
    snprintf(s->dims[0].name, SC_NAMELEN, "time");
    s->dims[0].len = NC_UNLIMITED;
    snprintf(s->dims[1].name, SC_NAMELEN, "y");
    s->dims[1].len = 5;
    snprintf(s->dims[2].name, SC_NAMELEN, "x");
    s->dims[2].len = 6;
    snprintf(s->dims[3].name, SC_NAMELEN, "nchar");
    s->dims[3].len = 4;
    s->setfill = 1;
    s->ngatts = 2;
    att_t *A = &s->gatts[0];
    snprintf(A->name, SC_NAMELEN, "title");
    A->xtype = NC_CHAR;
    A->len = 5;
    A->put_mt = MT_TEXT;
    for (int j = 0; j < 5; j++) A->vals[j] = num_i("fixed"[j]);
    A = &s->gatts[1];
    snprintf(A->name, SC_NAMELEN, "version");
    A->xtype = NC_INT;
    A->len = 1;
    A->put_mt = MT_INT;
    A->vals[0] = num_i(3);

    static const struct {
        const char *name;
        int xtype, ndims, dimids[3];
    } defs[4] = {{"temp", NC_DOUBLE, 3, {0, 1, 2}}, {"flags", NC_SHORT, 2, {1, 2}},
                 {"name", NC_CHAR, 2, {1, 3}}, {"total", NC_INT64, 0, {0}}};
    s->nvars = 4;
    for (int v = 0; v < 4; v++) {
        var_t *V = &s->vars[v];
        snprintf(V->name, SC_NAMELEN, "%s", defs[v].name);
        V->xtype = defs[v].xtype;
        V->ndims = defs[v].ndims;
        for (int i = 0; i < V->ndims; i++) {
            V->dimids[i] = defs[v].dimids[i];
            V->shape[i] = V->dimids[i] == 0 ? s->nrec : s->dims[V->dimids[i]].len;
        }
        V->is_rec = V->ndims > 0 && V->dimids[0] == 0;
        V->fill_on = 1;
        V->fill = num_default_fill(V->xtype);
        finish_var(V);
    }
    A = &s->vars[0].atts[s->vars[0].natts++];
    snprintf(A->name, SC_NAMELEN, "units");
    A->xtype = NC_CHAR;
    A->len = 1;
    A->put_mt = MT_TEXT;
    A->vals[0] = num_i('K');
    A = &s->vars[1].atts[s->vars[1].natts++];
    snprintf(A->name, SC_NAMELEN, "_FillValue");
    A->xtype = NC_SHORT;
    A->len = 1;
    A->put_mt = MT_SHORT;
    A->is_fill = 1;
    A->vals[0] = num_i(111);
    s->vars[1].fill = num_i(111);
    A = &s->vars[1].atts[s->vars[1].natts++];
    snprintf(A->name, SC_NAMELEN, "scale");
    A->xtype = NC_FLOAT;
    A->len = 2;
    A->put_mt = MT_FLOAT;
    A->vals[0] = num_f(1);
    A->vals[1] = num_f(2);

    for (int rec = 0; rec < 2; rec++) /* temp: row blocks per record, collective */
        for (int p = 0; p < s->M; p++) {
            MPI_Offset base = 5 / s->M, extra = 5 % s->M;
            MPI_Offset y0 = p * base + (p < extra ? p : extra), ny = base + (p < extra ? 1 : 0);
            if (!ny) continue;
            req_t *q = push_req(&s->w, &s->nw);
            q->var = 0, q->rank = p, q->api = API_VARA, q->mode = MODE_COLL, q->mt = MT_DOUBLE;
            q->start[0] = rec, q->start[1] = y0, q->start[2] = 0;
            q->count[0] = 1, q->count[1] = ny, q->count[2] = 6;
        }
    for (int p = 0; p < s->M && p < 6; p++) { /* flags: columns p, p+M, ... of rows 0..3, iput */
        req_t *q = push_req(&s->w, &s->nw);
        q->var = 1, q->rank = p, q->api = API_VARS, q->mode = MODE_NB, q->mt = MT_INT;
        q->start[0] = 0, q->start[1] = p;
        q->count[0] = 4, q->count[1] = (6 - p + s->M - 1) / s->M;
        q->stride[0] = 1, q->stride[1] = q->count[1] > 1 ? s->M : 1;
    }
    req_t *q = push_req(&s->w, &s->nw); /* name: all of it by rank 0, bput */
    q->var = 2, q->rank = 0, q->api = API_VARA, q->mode = MODE_BPUT, q->mt = MT_TEXT;
    q->count[0] = 5, q->count[1] = 4;
    q = push_req(&s->w, &s->nw); /* total: the last rank, independent */
    q->var = 3, q->rank = s->M - 1, q->api = API_VAR, q->mode = MODE_INDEP, q->mt = MT_LONGLONG;
    s->wphase[0] = MODE_COLL, s->wphase[1] = MODE_NB, s->wphase[2] = MODE_BPUT, s->wphase[3] = MODE_INDEP;
    s->nwphase = 4;
    s->wwait[MODE_NB] = WAIT_ALL_LIST;
    s->wwait[MODE_BPUT] = WAIT_ALL_LIST;
    for (int i = 0; i < MODE_COUNT; i++) s->wphase_forced[i] = 1;
}

/* Stream D: writes layered over 1..2 pieces (XFER_AVOID=layers leaves them out). A layer is the
 * piece's request again (variable, region, API, memory), by another rank where there is one, in a
 * phase before the piece's (UNDER) or after it (OVER), in a mode that this variable and API allow
 * there; the phases are separated by collective calls of the file, so PnetCDF's file has the later
 * write's values. A piece gets one layer at most, so no two layers overlap. */
static void gen_layers(scen_t *s, rng_t *r) {
    int pos[MODE_COUNT], n = rnd(r, 0, 2), pieces = s->nw;
    for (int i = 0; i < s->nwphase; i++) pos[s->wphase[i]] = i;
    unsigned char *layered = calloc((size_t)pieces + 1, 1);
    for (int tries = 0; n > 0 && tries < 20 && pieces > 0; tries++) {
        int i = rnd(r, 0, pieces - 1);
        const req_t *p = &s->w[i];
        if (p->err || p->cancel || layered[i]) continue;
        req_t q = *p;
        q.layer = chance(r, 50) ? LAYER_UNDER : LAYER_OVER;
        q.mode = rnd(r, 0, MODE_COUNT - 1);
        fix_varn_mode(s, &q, s->M);
        if (q.mode != fix_mode(s, q.var, q.mode, s->M) || bad_strided_rec(s, &q)) continue;
        if (q.layer == LAYER_UNDER ? pos[q.mode] >= pos[p->mode] : pos[q.mode] <= pos[p->mode]) continue;
        if (s->M > 1) q.rank = (p->rank + rnd(r, 1, s->M - 1)) % s->M;
        layered[i] = 1;
        *push_req(&s->w, &s->nw) = q; /* (p may move) */
        n--;
    }
    free(layered);
}

scen_t *scen_make(unsigned long long seed, int kase, int M, int N, int fixed) {
    scen_t *s = calloc(1, sizeof *s);
    s->seed = fixed ? 0 : seed;
    s->kase = kase;
    s->M = M;
    s->N = N;
    s->fixed = fixed;
    const char *avoid = getenv("XFER_AVOID");
    snprintf(s->avoid, sizeof s->avoid, "%s", avoid ? avoid : "");
    rng_t ra, rb, rc;
    rng_init(&ra, s->seed, (uint64_t)kase, 1, 0);
    rng_init(&rb, s->seed, (uint64_t)kase, 2, (uint64_t)M);
    rng_init(&rc, s->seed, (uint64_t)kase, 3, (uint64_t)N);
    if (fixed) {
        gen_fixed(s);
    } else {
        latv_t pieces[SC_MAXVARS] = {{0}};
        gen_structure(s, &ra, pieces);
        gen_writers(s, &rb, pieces);
        for (int v = 0; v < SC_MAXVARS; v++) free(pieces[v].a);
        if (!avoiding(s, "layers")) {
            rng_t rd;
            rng_init(&rd, s->seed, (uint64_t)kase, 4, (uint64_t)M);
            gen_layers(s, &rd);
        }
    }
    for (int over = 0; over < 2; over++) /* (the OVER layers last: their values win) */
        for (int i = 0; i < s->nw; i++)
            if (!s->w[i].err && !s->w[i].cancel && (s->w[i].layer == LAYER_OVER) == over) mark_written(s, &s->w[i]);
    for (int v = 0; v < s->nvars; v++) {
        var_t *V = &s->vars[v];
        int full = 1;
        for (MPI_Offset k = 0; k < V->nelems; k++) full &= V->written[k];
        V->fill_rec = V->is_rec && V->fill_on && (!full || (!fixed && chance(&ra, 30)));
    }
    gen_readers(s, &rc);
    return s;
}

void scen_free(scen_t *s) {
    if (!s) return;
    for (int v = 0; v < s->nvars; v++) free(s->vars[v].written);
    free(s->w);
    free(s->r);
    free(s->boxes);
    free(s);
}

/* ---------------------------------------------------------------------------------------------- */
/* printing                                                                                       */

static void num_str(num_t x, char *out, size_t size) {
    switch (x.kind) {
    case 0: snprintf(out, size, "%lld", x.i); break;
    case 1: snprintf(out, size, "%llu", x.u); break;
    default: snprintf(out, size, "%.9g", x.d); break;
    }
}

static void offs_str(const MPI_Offset *a, int n, char *out, size_t size) {
    size_t k = (size_t)snprintf(out, size, "[");
    for (int i = 0; i < n && k < size; i++) k += (size_t)snprintf(out + k, size - k, "%s%lld", i ? "," : "", (long long)a[i]);
    if (k < size) snprintf(out + k, size - k, "]");
}

void req_describe(const scen_t *s, const req_t *q, char *out, size_t size) {
    const var_t *V = &s->vars[q->var];
    char st[64], ct[64], sd[64], im[64];
    offs_str(q->start, V->ndims, st, sizeof st);
    offs_str(q->count, V->ndims, ct, sizeof ct);
    offs_str(q->stride, V->ndims, sd, sizeof sd);
    offs_str(q->imap, V->ndims, im, sizeof im);
    size_t k = (size_t)snprintf(out, size, "rank%d %s%s %s%s %s mem=%s", q->rank, q->zero ? "zero-length " : "", V->name,
                                api_name(q->api), q->flex == FX_NONE ? "" : "(flex)", mode_name(q->mode), mt_name(q->mt));
    if (q->flex != FX_NONE && k < size) k += (size_t)snprintf(out + k, size - k, " buftype=%s(%d)", flex_name(q->flex), q->fxparam);
    if (q->api == API_VARN && k < size) { /* num=0 for a zero-length collective participation */
        k += (size_t)snprintf(out + k, size - k, " num=%d%s", q->nbox, q->nullcounts ? " counts=NULL" : "");
        for (int b = 0; b < q->nbox && k < size; b++) {
            const box_t *B = &s->boxes[q->box0 + b];
            offs_str(B->start, V->ndims, st, sizeof st);
            offs_str(B->count, V->ndims, ct, sizeof ct);
            if (b == 10 && q->nbox > 12) {
                k += (size_t)snprintf(out + k, size - k, " ...(%d more)", q->nbox - 11);
                b = q->nbox - 2;
                continue;
            }
            k += (size_t)snprintf(out + k, size - k, " %s%s%s", st, q->nullcounts ? "" : "+", q->nullcounts ? "" : ct);
        }
    }
    if (q->cancel && k < size)
        k += (size_t)snprintf(out + k, size - k, " CANCELLED(%s%s%s)", cancel_name(q->cancel), q->cancel_stale ? ",stale-id" : "",
                              q->cancel_inwait ? ",in-wait" : "");
    if (q->api != API_VAR && q->api != API_VARN && V->ndims && k < size) k += (size_t)snprintf(out + k, size - k, " start=%s", st);
    if ((q->api == API_VARA || q->api == API_VARS || q->api == API_VARM) && V->ndims && k < size)
        k += (size_t)snprintf(out + k, size - k, " count=%s", ct);
    if ((q->api == API_VARS || q->api == API_VARM) && V->ndims && k < size)
        k += (size_t)snprintf(out + k, size - k, " stride=%s", sd);
    if (q->api == API_VARM && V->ndims && k < size) k += (size_t)snprintf(out + k, size - k, " imap=%s", im);
    if (q->layer && k < size)
        k += (size_t)snprintf(out + k, size - k, " LAYER(%s)", q->layer == LAYER_UNDER ? "under: overwritten later"
                                                                                      : "over: its values win");
    if (q->err && k < size) snprintf(out + k, size - k, " expect=%s", err_name(q->err));
}

static void print_att(FILE *f, const att_t *A, int get_mt) {
    fprintf(f, "    att %s %s[%d] put_att_%s%s =", A->name, xtype_name(A->xtype), A->len,
            A->put_mt < 0 ? "(void)" : mt_name(A->put_mt), A->is_fill == 2 ? " (by def_var_fill)" : "");
    for (int j = 0; j < A->len; j++) {
        char b[40];
        if (A->xtype == NC_CHAR) snprintf(b, sizeof b, "%c", (char)A->vals[j].i);
        else num_str(A->vals[j], b, sizeof b);
        fprintf(f, " %s", b);
    }
    fprintf(f, "   (reader: get_att_%s)\n", get_mt < 0 ? "text/raw" : mt_name(get_mt));
}

void scen_print(const scen_t *s, FILE *f) {
    static const char *waits[] = {"wait_all(NC_REQ_ALL)", "wait_all(list)", "wait(list) in indep mode"};
    static const char *dvfs[] = {"-", "def_var_fill(0,NULL)", "def_var_fill(0,&custom)", "def_var_fill(1,NULL)"};
    fprintf(f, "scenario seed=%llu case=%d%s writers=%d readers=%d salt=%d%s%s\n", s->seed, s->kase,
            s->fixed ? " (fixed, Fortran writer)" : "", s->M, s->N, s->salt, s->avoid[0] ? " XFER_AVOID=" : "", s->avoid);
    fprintf(f, "  format CDF-5, set_fill(%s)\n", s->setfill ? "NC_FILL" : "default NC_NOFILL");
    for (int d = 0; d < s->ndims; d++)
        if (d == s->recdim) fprintf(f, "  dim %d %s = UNLIMITED (%lld records)\n", d, s->dims[d].name, (long long)s->nrec);
        else fprintf(f, "  dim %d %s = %lld\n", d, s->dims[d].name, (long long)s->dims[d].len);
    for (int a = 0; a < s->ngatts; a++) print_att(f, &s->gatts[a], s->att_mt[0][a]);
    for (int v = 0; v < s->nvars; v++) {
        const var_t *V = &s->vars[v];
        char fv[40];
        num_str(V->fill, fv, sizeof fv);
        fprintf(f, "  var %d %s %s(", v, V->name, xtype_name(V->xtype));
        for (int i = 0; i < V->ndims; i++) fprintf(f, "%s%s", i ? "," : "", s->dims[V->dimids[i]].name);
        MPI_Offset nw = 0;
        for (MPI_Offset k = 0; k < V->nelems; k++) nw += V->written[k] != 0;
        fprintf(f, ") %lld elements, %lld written; fill %s value %s; %s%s\n", (long long)V->nelems, (long long)nw,
                V->fill_on ? "on" : "off", fv, dvfs[V->dvf], V->fill_rec ? "; fill_var_rec for every record" : "");
        for (int a = 0; a < V->natts; a++) print_att(f, &V->atts[a], s->att_mt[v + 1][a]);
        if (V->nelems <= 400 && nw < V->nelems) {
            fprintf(f, "    written map (row-major, . = never written, o = a layer's values):");
            for (MPI_Offset k = 0; k < V->nelems; k++) {
                if (V->ndims && k % V->shape[V->ndims - 1] == 0) fprintf(f, "\n      ");
                fputc(V->written[k] == 2 ? 'o' : V->written[k] ? '#' : '.', f);
            }
            fputc('\n', f);
        }
    }
    char line[512];
    fprintf(f, "  writer phases:");
    for (int i = 0; i < s->nwphase; i++)
        fprintf(f, " %s%s", mode_name(s->wphase[i]),
                s->wphase[i] == MODE_NB || s->wphase[i] == MODE_BPUT ? (s->wphase[i] == MODE_NB ? "" : "") : "");
    fprintf(f, " (nb completes with %s, bput with %s%s)\n", waits[s->wwait[MODE_NB]], waits[s->wwait[MODE_BPUT]],
            s->wstale_wait ? "; then a wait(list) waits again for a completed id" : "");
    for (int i = 0; i < s->nw; i++) {
        req_describe(s, &s->w[i], line, sizeof line);
        fprintf(f, "    put %d: %s\n", i, line);
    }
    fprintf(f, "  reader phases:");
    for (int i = 0; i < s->nrphase; i++) fprintf(f, " %s", mode_name(s->rphase[i]));
    fprintf(f, " (nb completes with %s%s)\n", waits[s->rwait], s->rstale_wait ? "; then waits again for a completed id" : "");
    for (int i = 0; i < s->nr; i++) {
        req_describe(s, &s->r[i], line, sizeof line);
        fprintf(f, "    get %d: %s\n", i, line);
    }
}

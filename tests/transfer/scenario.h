/*
 * Deterministic scenario generator of the transfer-mode property test (see xfer_prop.c, prop.py).
 *
 * A scenario is a function of (seed, case, M writer ranks, N reader ranks) only, computed identically
 * by every rank of both programs, with three independent random streams:
 *   A (seed, case)     the file: dimensions, variables, attributes, fill settings, the pieces the
 *                      writers write (a disjoint decomposition, some pieces dropped), value salt;
 *   B (seed, case, M)  who writes each piece and how (API, memory type or MPI datatype, mode);
 *   C (seed, case, N)  what the readers request and how.
 * So the data of a case does not depend on the rank counts, only its decomposition does. Stream B
 * also makes the cancelled puts (onto never-written pieces or beyond the records), stream C the
 * cancelled gets; the boxes of the varn requests of both sides are kept in one pool (s->boxes).
 * A fourth stream D (seed, case, M) layers writes over some pieces (`over`): the same elements put
 * again by another rank in an earlier phase (overwritten: the piece's values must win) or a later one
 * (its own values must win), phases being ordered by collective calls of the file, as PnetCDF orders
 * the writes; D leaves the other streams' draws alone, so a seed's scenario is otherwise the same.
 * XFER_AVOID (read here) turns features off for triage; the scenario prints it.
 *
 * Nothing here calls MPI (MPI_Offset is only a type), so `xfer_prop describe` runs without mpirun.
 * The memory layout of a request (where each element goes in the user buffer, including the
 * typemap of the MPI derived datatypes) is computed here independently of MPI; xfer_prop.c builds
 * the MPI datatypes from the same parameters, and the reader's self-check compares the two.
 */
#ifndef XFER_SCENARIO_H
#define XFER_SCENARIO_H

#include <mpi.h>
#include <pnetcdf.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SC_MAXDIMS 4   /* per variable */
#define SC_MAXFDIMS 6  /* per file */
#define SC_MAXVARS 4
#define SC_MAXATTS 6   /* per variable, including _FillValue */
#define SC_MAXATTLEN 8
#define SC_NAMELEN 32
#define SC_GUARD 8     /* bytes of sentinel before and after every user buffer */

/* Memory (in-memory element) types: the typed API suffixes. */
enum { MT_TEXT, MT_SCHAR, MT_UCHAR, MT_SHORT, MT_USHORT, MT_INT, MT_UINT, MT_LONG, MT_FLOAT, MT_DOUBLE,
       MT_LONGLONG, MT_ULONGLONG, MT_COUNT };
/* Which API family. */
enum { API_VAR, API_VAR1, API_VARA, API_VARS, API_VARM, API_VARN, API_COUNT };
/* How it is issued: blocking collective, blocking independent, nonblocking (iput/iget + wait),
 * buffered (bput + wait; writer only). */
enum { MODE_COLL, MODE_INDEP, MODE_NB, MODE_BPUT, MODE_COUNT };
/* Typed API (FX_NONE) or flexible API with this buffer datatype. */
enum {
    FX_NONE,     /* ncmpi_put_vara_<type>                                                        */
    FX_BASIC,    /* buftype = the basic MPI type, bufcount = n                                   */
    FX_NEG1,     /* buftype = the basic MPI type, bufcount = -1 (count taken from the request)  */
    FX_NULL,     /* buftype = MPI_DATATYPE_NULL: buffer in the variable's external type         */
    FX_SUBARRAY, /* MPI_Type_create_subarray of a halo-padded array (halo = fxparam), bufcount 1 */
    FX_VECTOR,   /* MPI_Type_vector(n, 1, fxparam, basic), bufcount 1                           */
    FX_CONTIG,   /* MPI_Type_contiguous(fxparam, basic), bufcount n / fxparam                   */
    FX_RESIZED,  /* basic resized to extent fxparam * size, bufcount n                          */
    FX_INDEXED,  /* indexed_block, elements in reverse order, gap fxparam-1, bufcount 1         */
    FX_COUNT
};
/* Deliberately wrong requests (independent mode only): the expected return code. */
enum { ERR_NONE, ERR_COORDS, ERR_EDGE, ERR_CHAR, ERR_NOTVAR, ERR_COUNT };
/* How a nonblocking phase completes. */
enum { WAIT_ALL_REQALL, WAIT_ALL_LIST, WAIT_INDEP_LIST, WAIT_COUNT };
/* A request that is posted (iput/bput/iget) and then cancelled with ncmpi_cancel, and when:
 * right after it is posted (list of one), after all requests of its phase were posted (list of one),
 * or, posted before any other request of its phase, with ncmpi_cancel(NC_REQ_ALL). */
enum { CANCEL_NONE, CANCEL_NOW, CANCEL_LAST, CANCEL_ALL, CANCEL_COUNT };
/* A write layered over a piece of the decomposition (stream D): none, or the same elements put by
 * another rank in an earlier phase (UNDER: values the piece overwrites) or in a later one (OVER). */
enum { LAYER_NONE, LAYER_UNDER, LAYER_OVER };
/* def_var_fill usage. */
enum { DVF_NONE, DVF_FILL_NULL, DVF_FILL_CUSTOM, DVF_NOFILL };

/* A number as it is held in the file (or given by the program): kind 0 signed, 1 unsigned,
 * 2 float (value in d, exactly representable as float), 3 double. */
typedef struct {
    int kind;
    long long i;
    unsigned long long u;
    double d;
} num_t;

typedef struct {
    char name[SC_NAMELEN];
    int xtype;
    int len;
    int put_mt;              /* memory type of the ncmpi_put_att_<type> call */
    int is_fill;             /* _FillValue */
    num_t vals[SC_MAXATTLEN]; /* NC_CHAR: vals[j].i is the character */
} att_t;

typedef struct {
    char name[SC_NAMELEN];
    MPI_Offset len; /* NC_UNLIMITED for the record dimension */
} dim_t;

typedef struct {
    char name[SC_NAMELEN];
    int xtype;
    int ndims;
    int dimids[SC_MAXDIMS];
    MPI_Offset shape[SC_MAXDIMS]; /* record dimension: nrec */
    MPI_Offset nelems;
    int is_rec;
    int natts;
    att_t atts[SC_MAXATTS]; /* in file order, _FillValue included where it ends up */
    int dvf;                /* DVF_*: def_var_fill call after the attributes */
    int fill_on;            /* effective: never-written elements read as fill */
    num_t fill;             /* effective fill value (custom or the type's default) */
    int fill_rec;           /* writer calls ncmpi_fill_var_rec for every record */
    unsigned char *written; /* nelems: 0 never written, 1 written, 2 last written by a LAYER_OVER put */
} var_t;

/* One (start, count) pair of a varn request. */
typedef struct {
    MPI_Offset start[SC_MAXDIMS], count[SC_MAXDIMS];
} box_t;

typedef struct {
    int var;                /* index in the scenario (the varid, unless err == ERR_NOTVAR) */
    int rank;
    int api, mode, mt, flex, fxparam, err;
    int zero;               /* a zero-length participation request of a collective round */
    int box0, nbox;         /* API_VARN: boxes s->boxes[box0 .. box0+nbox), in buffer order */
    int nullcounts;         /* API_VARN: counts == NULL (every box is one element)          */
    int cancel;             /* CANCEL_*: posted, then cancelled (never takes effect)         */
    int cancel_stale;       /* then cancelled again with the saved id: NC_EINVAL_REQUEST     */
    int cancel_inwait;      /* its (NC_REQ_NULL) id is passed to the wait of its phase too   */
    int layer;              /* LAYER_*: a write layered over a piece (its values: req_put_value) */
    MPI_Offset start[SC_MAXDIMS], count[SC_MAXDIMS], stride[SC_MAXDIMS], imap[SC_MAXDIMS];
} req_t;

/* Where the elements of a request go in the user buffer. */
typedef struct {
    MPI_Offset n;     /* elements of the request */
    int mt;           /* memory type of the elements */
    int elsize;
    size_t bytes;     /* buffer size, guards excluded */
    size_t *off;      /* n byte offsets (relative to the buffer given to PnetCDF) */
    MPI_Offset bufcount_elems; /* elements covered by bufcount x buftype (flexible API) */
} layout_t;

typedef struct {
    unsigned long long seed;
    int kase, M, N, fixed;
    int salt;
    int ndims;
    dim_t dims[SC_MAXFDIMS];
    int recdim;      /* dimension id of the unlimited dimension, -1 if none */
    MPI_Offset nrec; /* records every record variable spans */
    int setfill;     /* ncmpi_set_fill(NC_FILL) in define mode */
    int ngatts;
    att_t gatts[SC_MAXATTS];
    int nvars;
    var_t vars[SC_MAXVARS];
    int nw, nr;
    req_t *w;        /* writer requests (the pieces kept, plus deliberate errors) */
    req_t *r;        /* reader requests */
    int nboxes;
    box_t *boxes;    /* the boxes of all varn requests */
    char avoid[128]; /* XFER_AVOID at generation (features turned off; see prop.py --avoid) */
    int wphase[MODE_COUNT], nwphase; /* writer phase order (modes); all four */
    int rphase[MODE_COUNT], nrphase; /* reader phase order; COLL, INDEP, NB */
    int wwait[MODE_COUNT], rwait;    /* WAIT_* for the NB and BPUT phases */
    int wstale_wait, rstale_wait;    /* after a wait(list) in indep mode, wait again for a completed id:
                                      * NC_EINVAL_REQUEST, the id left alone */
    int wphase_forced[MODE_COUNT];   /* run the phase even when nobody has requests in it */
    int rphase_forced[MODE_COUNT];
    int att_mt[SC_MAXVARS + 1][SC_MAXATTS]; /* memory type of the reader's get_att_<type> (or -1) */
} scen_t;

/* Build the scenario of (seed, case) for M writer and N reader ranks; fixed=1 builds the fixed
 * scenario that the Fortran writer also implements (seed ignored; the salt is the case number). */
scen_t *scen_make(unsigned long long seed, int kase, int M, int N, int fixed);
void scen_free(scen_t *s);
void scen_print(const scen_t *s, FILE *f);
/* One-line description of a request, e.g. "v1 vars coll mem=short flex=subarray(1) start=[0,2] ...". */
void req_describe(const scen_t *s, const req_t *q, char *out, size_t size);

/* The fixed-size variable with dimensions that zero-length collective requests for the scalar v use
 * (-1: none; then v is never accessed collectively by a component of more than one rank). */
int scen_zero_partner(const scen_t *s, int v);

/* The value written to element idx (row-major linear index) of variable v, as held in the file. */
num_t scen_value(const scen_t *s, int v, MPI_Offset idx);
/* Expected content of element idx of variable v as read: the value or the fill value. */
num_t scen_expected(const scen_t *s, int v, MPI_Offset idx);
/* The different value a cancelled put writes to element idx of variable v (never takes effect); a
 * LAYER_UNDER put writes it too (overwritten). */
num_t scen_cancel_value(const scen_t *s, int v, MPI_Offset idx);
/* The value a LAYER_OVER put writes to element idx of variable v: different from the other two. */
num_t scen_over_value(const scen_t *s, int v, MPI_Offset idx);
/* Element idx as a put of request q writes it: scen_value, scen_cancel_value for a cancelled put or a
 * LAYER_UNDER one, scen_over_value for a LAYER_OVER one. */
num_t req_put_value(const scen_t *s, const req_t *q, MPI_Offset idx);

/* Convert a number into memory type mt like PnetCDF does on a get: returns NC_NOERR or NC_ERANGE
 * (then the element gets the memory type's fill value). */
int num_to_mem(num_t x, int mt, void *out);
num_t num_default_fill(int xtype);
int xtype_size(int xtype);
int xtype_natural_mt(int xtype);
const char *xtype_name(int xtype);
int mt_size(int mt);
const char *mt_name(int mt);
const char *api_name(int api);
const char *mode_name(int mode);
const char *flex_name(int flex);
const char *err_name(int err);
const char *cancel_name(int cancel);
int err_code(int err);

/* The effective start/count/stride of a request (whole variable for API_VAR, ones for API_VAR1;
 * for API_VARN meaningless: use req_nelems and req_element_index). */
void req_region(const scen_t *s, const req_t *q, MPI_Offset *start, MPI_Offset *count, MPI_Offset *stride);
/* Number of elements a request accesses (all boxes of a varn). */
MPI_Offset req_nelems(const scen_t *s, const req_t *q);
/* Layout of the request's user buffer; free with layout_free. */
void layout_make(const scen_t *s, const req_t *q, layout_t *L);
void layout_free(layout_t *L);
/* Linear index in variable q->var of the k-th element (row-major order) of the request region
 * (API_VARN: of the boxes in list order; start/count/stride are ignored). */
MPI_Offset req_element_index(const scen_t *s, const req_t *q, const MPI_Offset *start, const MPI_Offset *count,
                             const MPI_Offset *stride, MPI_Offset k);

/* Sentinel byte at offset i (from the start of the guarded allocation). */
static inline unsigned char sentinel_byte(size_t i) { return (unsigned char)(0xA5u ^ (unsigned)(i * 29u)); }

#endif

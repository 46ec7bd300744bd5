// Memory layouts of PnetCDF get/put buffers: turn the user's buffer into a dense array of elements
// of one memory type in row-major request order (gather, put side) and back (scatter, get side).
//
// As in PnetCDF, a buffer is described in up to two stages:
//  1. flexible API: (buf, bufcount, buftype) with any MPI datatype whose primitive elements all have
//     one type. Packing bufcount x buftype yields the request's elements ("lbuf"). Skipped when the
//     buffer is a plain element array (typed API, predefined buftype, bufcount -1, MPI_DATATYPE_NULL).
//  2. varm: element (i0..ik) of the request sits at element offset sum(i_d * imap[d]) of lbuf, or of
//     the user's buffer when stage 1 is skipped (the offsets may then leave bufcount's range, and be
//     negative, as in PnetCDF).
// Flexible-API errors, in PnetCDF's order: bufcount -1 with a buftype that is not one of the twelve
// predefined C types of the typed API -> NC_EBADTYPE; an element type PnetCDF does not know ->
// NC_EUNSPTETYPE; several element types -> NC_EMULTITYPES; element count != request count ->
// NC_EIOMISMATCH; MPI_BYTE / MPI_UNSIGNED_LONG elements -> NC_EBADTYPE. Text/number mixes
// (NC_ECHAR) are convert_put/convert_get's business (PnetCDF itself aborts on them in the flexible API).
#pragma once

#include <pnetcdf.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dtf::types {

// Memory type (convert.hpp ids, MEM_LONG for MPI_LONG) of a primitive MPI datatype as PnetCDF's
// flexible API reads it; Fortran types map to their C equivalents (MPI_INTEGER -> NC_INT,
// MPI_REAL8 -> NC_DOUBLE, MPI_CHARACTER -> NC_CHAR ...). NC_NAT when it has none; *err (if given) then
// tells NC_EBADTYPE (MPI_BYTE, MPI_UNSIGNED_LONG: accepted by PnetCDF's decoder, rejected later) or
// NC_EUNSPTETYPE (anything else).
nc_type memtype_of_mpi(MPI_Datatype t, int *err = nullptr) noexcept;

// A user buffer description. Move-only: it owns a duplicate of a derived buftype (so the user may
// free theirs while a nonblocking request is pending).
struct MemLayout {
    nc_type memtype = NC_NAT; // type of the elements in the user's buffer (a convert.hpp id)
    size_t elsize = 0;        // bytes per element
    int64_t nelems = 0;       // elements of the request
    // Stage 1: non-contiguous buftype (owned dup), else MPI_DATATYPE_NULL.
    MPI_Datatype buftype = MPI_DATATYPE_NULL;
    MPI_Offset bufcount = 0;
    // Stage 2: per-dimension counts and element strides; empty when the request is row-major dense.
    std::vector<MPI_Offset> count, imap;

    // The user's buffer already is the dense array: gather/scatter are a memcpy, or nothing.
    bool contiguous() const { return buftype == MPI_DATATYPE_NULL && imap.empty(); }
    size_t dense_bytes() const { return static_cast<size_t>(nelems) * elsize; }

    MemLayout() = default;
    MemLayout(const MemLayout &) = delete;
    MemLayout &operator=(const MemLayout &) = delete;
    MemLayout(MemLayout &&o) noexcept;
    MemLayout &operator=(MemLayout &&o) noexcept;
    ~MemLayout();

private:
    void release() noexcept; // free the owned buftype (unless MPI is finalized)
};

// Typed API (ncmpi_put_vara_int ...): a contiguous buffer of nelems elements of memtype.
int describe_typed(nc_type memtype, int64_t nelems, MemLayout *out);

// Flexible API (ncmpi_put_vara ...): bufcount x buftype for a request of nelems elements of a
// variable of external type xtype (MPI_DATATYPE_NULL: the buffer holds xtype elements, bufcount is
// ignored; bufcount -1: buftype is a predefined element type and the count is nelems).
int describe_flexible(MPI_Offset bufcount, MPI_Datatype buftype, nc_type xtype, int64_t nelems,
                      MemLayout *out);

// varm: add the imap stage (imap may be null: nothing to do). count has ndims entries whose product
// must be out->nelems (else NC_EINVAL); with a stage-1 buftype every offset must stay within the
// nelems packed elements (else NC_EINVAL; PnetCDF would read or write past its buffer).
int apply_imap(MemLayout *out, int ndims, const MPI_Offset *count, const MPI_Offset *imap);

// ncmpi_put_vard/get_vard: the bytes a file type selects, in the order of its type map, as runs of
// (offset, bytes) from its displacement 0 (adjacent runs merged), and its one element type. NC_NOERR;
// NC_EMULTITYPES when it is made of several element types; NC_EUNSPTETYPE for a combiner dtf does not
// take apart (darray, the Fortran-parameterized ones).
struct ByteRun {
    int64_t offset, bytes;
};
int flatten(MPI_Datatype filetype, std::vector<ByteRun> *runs, MPI_Datatype *elem);

// Put side: copy the request's elements from user_buf into dense (resized to dense_bytes()).
int gather(const MemLayout &l, const void *user_buf, std::vector<char> &dense);
// Put side without a copy when the layout is contiguous: returns user_buf itself, else gathers into
// scratch and returns its data; nullptr on error (*err set, may be null).
const char *gather_view(const MemLayout &l, const void *user_buf, std::vector<char> &scratch,
                        int *err = nullptr);
// Get side: store the dense elements (dense_bytes()) into the user's buffer; memory the layout does
// not address keeps its contents.
int scatter(const MemLayout &l, const char *dense, void *user_buf);

// Where each element of a request goes in the user's buffer when the layout is an array walked with
// strides: a buftype that is an MPI subarray of its element type (bufcount of them one extent apart,
// as a model's halo-padded arrays), or an imap alone (varm) that puts no two elements in one place.
// Then a run of the dense array can be stored from wherever it is (a piece of a writer's message)
// straight in its places, instead of through a dense copy first (place()).
struct StridedMap {
    std::vector<int64_t> count, stride; // slowest dimension first, strides in elements
    int64_t base = 0;                   // element offset of the request's first element
    bool valid() const { return !count.empty(); }
};
// The map of `l`; not valid() when it has none (contiguous, other datatypes, both stages, an imap
// that repeats offsets): then scatter() is the way.
StridedMap strided_map(const MemLayout &l);
// Store the request's dense elements first .. first + n - 1 (at `src`, es bytes each) in their places
// in user_buf.
void place(const StridedMap &m, size_t es, int64_t first, int64_t n, const char *src, void *user_buf);

} // namespace dtf::types
